import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { newId, newSecret } from '../../core/common/ids';
import { hashAdminToken } from '../../core/edge-protocol/secret-hash';
import { SidecarToken } from './sidecar-token.entity';
import { SIDECAR_TOKEN_PREFIX } from './sidecar-token-access';
import { CreatedSidecarTokenView, CreateSidecarTokenDto, SidecarTokenView } from './sidecar-tokens.dto';

const PREFIX_CHARS = 8;

/**
 * Sidecar tokens: an organization's credential for its edge sidecars, good for the bundle fetch
 * and the audit ingest only, so a sidecar host need not hold the admin token. Issued once and
 * stored hashed as admin tokens and API keys are (SHA-256 of 256 random bits, looked up by
 * hash); looked up on every call, so a revocation holds on every instance at once.
 */
@Injectable()
export class SidecarTokensService {
  constructor(
    @InjectRepository(SidecarToken) private readonly tokens: Repository<SidecarToken>,
    private readonly audit: AuditService,
  ) {}

  async create(admin: AdminPrincipal, dto: CreateSidecarTokenDto): Promise<CreatedSidecarTokenView> {
    const token = newSecret(SIDECAR_TOKEN_PREFIX.slice(0, -1));
    const row = await this.tokens.save(
      this.tokens.create({
        id: newId('sctk'),
        orgId: admin.orgId,
        name: dto.name ?? 'sidecar',
        tokenHash: hashAdminToken(token),
        tokenPrefix: token.slice(0, PREFIX_CHARS),
        revokedAt: null,
      }),
    );
    this.audit.recordAdminEvent(admin, { action: 'sidecartoken.create', details: { id: row.id, name: row.name } });
    return { id: row.id, token, name: row.name, createdAt: row.createdAt.toISOString() };
  }

  async list(admin: AdminPrincipal): Promise<SidecarTokenView[]> {
    const rows = await this.tokens.find({ where: { orgId: admin.orgId }, order: { createdAt: 'ASC' } });
    return rows.map(toView);
  }

  /** Revokes at once (every call looks the token up); revoking a revoked token changes nothing. */
  async revoke(admin: AdminPrincipal, id: string): Promise<SidecarTokenView> {
    const row = await this.tokens.findOne({ where: { id, orgId: admin.orgId } });
    if (row === null) throw AppError.notFound('sidecar token', id);
    if (row.revokedAt !== null) return toView(row);
    const revokedAt = new Date();
    // Only while still active: of two revocations at once, one writes and records it.
    const { affected } = await this.tokens.update({ id, orgId: admin.orgId, revokedAt: IsNull() }, { revokedAt });
    if (!affected) return toView(await this.tokens.findOneOrFail({ where: { id, orgId: admin.orgId } }));
    this.audit.recordAdminEvent(admin, { action: 'sidecartoken.revoke', details: { id, name: row.name } });
    return toView({ ...row, revokedAt });
  }

  /** The organization a live sidecar token acts for (`tokenId`: the token's id), or null. */
  async authenticate(token: string): Promise<AdminPrincipal | null> {
    const row = await this.tokens.findOne({ where: { tokenHash: hashAdminToken(token), revokedAt: IsNull() } });
    return row === null ? null : { orgId: row.orgId, tokenId: row.id };
  }
}

function toView(row: SidecarToken): SidecarTokenView {
  return { id: row.id, name: row.name, prefix: row.tokenPrefix, createdAt: row.createdAt.toISOString(), revokedAt: row.revokedAt?.toISOString() ?? null };
}
