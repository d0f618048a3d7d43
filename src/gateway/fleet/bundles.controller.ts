import { Body, Controller, Get, Headers, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiConflictResponse, ApiForbiddenResponse, ApiHeader, ApiNotModifiedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { SidecarTokenAccepted } from '../access/sidecar-token-access';
import type { SignedBundle } from '../../core/edge-protocol/bundle-format';
import { AuditIngestDto, AuditIngestResult, EdgeGrantView, SidecarGrantDto, SidecarListView } from './bundles.dto';
import { EdgeGrantsService } from './edge-grants.service';
import type { EdgeGrant } from '../../core/edge-protocol/edge-grant';
import { BundlesService } from './bundles.service';
import { ingestBatchOf } from './ingest-batch';
import { parseSidecarLabels, SidecarHeader, SIDECAR_LABELS_RULE, SidecarLabels } from '../../core/edge-protocol/sidecar-protocol';
import { AppError } from '../../core/common/app-error';
import { SidecarsService } from './sidecars.service';

@ApiTags('sidecar')
@AdminAuth()
@Controller()
export class BundlesController {
  constructor(
    private readonly bundles: BundlesService,
    private readonly sidecars: SidecarsService,
    private readonly grants: EdgeGrantsService,
  ) {}

  @Get('api/v1/bundle')
  @SidecarTokenAccepted()
  @ApiOperation({
    summary: 'The organization’s signed policy bundle for edge sidecars; 304 when If-None-Match names the current content',
    description: 'X-Admin-Token: an admin token or a sidecar token (POST /admin/sidecar-tokens).',
  })
  @ApiHeader({ name: 'If-None-Match', required: false })
  @ApiHeader({ name: SidecarHeader.Id, required: false, description: 'The fetching sidecar, listed by GET /admin/sidecars' })
  @ApiHeader({ name: SidecarHeader.Mode, required: false, description: 'The fetching sidecar’s MODE' })
  @ApiHeader({ name: SidecarHeader.AuditSeq, required: false, description: 'The highest audit sequence number the fetching sidecar has used' })
  @ApiHeader({ name: SidecarHeader.Labels, required: false, description: 'The fetching sidecar’s labels (SIDECAR_LABELS, `name=value,…`): a canary rollout to labelled sidecars sends its new version only to those it selects' })
  @ApiBadRequestResponse({ description: 'X-Sidecar-Labels is not a list of name=value labels', type: ErrorBody })
  @ApiOkResponse({ description: 'The bundle (see docs/architecture.md “Edge sidecar”)' })
  @ApiNotModifiedResponse({ description: 'The sidecar already holds this content' })
  async bundle(
    @CurrentAdmin() admin: AdminPrincipal,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Headers('x-sidecar-id') sidecarId: string | undefined,
    @Headers('x-sidecar-mode') mode: string | undefined,
    @Headers('x-sidecar-audit-seq') auditSeq: string | undefined,
    @Headers('x-sidecar-labels') labelsHeader: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<SignedBundle | undefined> {
    const labels = labelsOf(labelsHeader);
    const served = await this.bundles.bundle(admin, ifNoneMatch, labels);
    await this.sidecars.recordSync(admin, { id: sidecarId, mode, auditSeq, labels, bundleVersion: served.version });
    response.setHeader('ETag', served.etag);
    response.setHeader(SidecarHeader.BundleVersion, served.version);
    response.setHeader('Cache-Control', 'no-cache');
    if (served.bundle === undefined) {
      response.status(304);
      return undefined;
    }
    return served.bundle;
  }

  @Post('api/v1/sidecar/grant')
  @HttpCode(200)
  @SidecarTokenAccepted()
  @ApiOperation({
    summary: 'A sidecar’s grant: a certificate of its decision-token key and the edge credentials sealed to its key',
    description: 'X-Admin-Token: a sidecar token, bound to the keys of its first grant (docs/security.md “Sidecars”).',
  })
  @ApiOkResponse({ type: EdgeGrantView })
  @ApiBadRequestResponse({ description: 'A key that is not an Ed25519 / X25519 public JWK, or a bad sidecarId', type: ErrorBody })
  @ApiForbiddenResponse({ description: 'Not a sidecar token', type: ErrorBody })
  @ApiConflictResponse({ description: 'The sidecar token is bound to other sidecar keys', type: ErrorBody })
  grant(@CurrentAdmin() admin: AdminPrincipal, @Body() dto: SidecarGrantDto): Promise<EdgeGrant> {
    return this.grants.grant(admin, dto);
  }

  @Post('api/v1/audit/ingest')
  @HttpCode(200)
  @SidecarTokenAccepted()
  @ApiOperation({ summary: 'A sidecar’s buffered audit entries; idempotent by (sidecarId, seq)', description: 'X-Admin-Token: an admin token or a sidecar token (POST /admin/sidecar-tokens).' })
  @ApiOkResponse({ type: AuditIngestResult })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message)', type: ErrorBody })
  @ApiBody({ type: AuditIngestDto })
  // `unknown`, not the DTO: the global ValidationPipe leaves the body to ingestBatchOf, which checks the DTO's rules by hand.
  ingest(@CurrentAdmin() admin: AdminPrincipal, @Body() body: unknown): Promise<AuditIngestResult> {
    return this.sidecars.ingest(admin, ingestBatchOf(body));
  }

  @Get('admin/sidecars')
  @ApiOperation({ summary: 'Every sidecar that synced: bundle version, last sync, mode, audit sequence and gaps' })
  @ApiOkResponse({ type: SidecarListView })
  async list(@CurrentAdmin() admin: AdminPrincipal): Promise<SidecarListView> {
    return { sidecars: await this.sidecars.list(admin) };
  }
}

/** X-Sidecar-Labels as labels; a 400 naming the problem when it is not a list of labels. */
function labelsOf(header: string | undefined): SidecarLabels {
  if (header === undefined) return {};
  const parsed = parseSidecarLabels(header);
  if ('problem' in parsed) throw AppError.invalid(`${SidecarHeader.Labels}: ${parsed.problem} (${SIDECAR_LABELS_RULE})`);
  return parsed.labels;
}
