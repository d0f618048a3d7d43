import { Injectable, Optional } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, QueryFailedError, Repository } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';
import { AuditService } from '../audit/audit.service';
import { ClusterEvents } from '../changes/cluster-events';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { newId } from '../../core/common/ids';
import { readMcpServers } from '../../core/mcp/mcp-server-list';
import { parseProxyUrl, PROXY_PREFIX } from '../../core/proxy/proxy-path';
import { CreateCredentialDto, CredentialView, HEADER_NAME, HEADER_VALUE, QUERY_NAME, RotateCredentialDto } from './credentials.dto';
import { CredentialSealer, KeyMissing } from './credential-sealer';
import { StoredCredentials } from './stored-credentials';
import { UpstreamCredential } from './upstream-credential.entity';

/** Headers the gateway writes or strips itself: a credential cannot take their place. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'proxy-authorization',
  'proxy-connection',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'forwarded',
  'x-trace-id',
  'traceparent',
]);

/**
 * Upstream credentials, created, rotated and revoked by an organization's admins (docs/security.md
 * "Upstream credentials"): one active credential per route, its value sealed at rest and never
 * answered, every change an audit entry naming the credential's id, in force on every instance
 * before the answer (ClusterEvents).
 */
@Injectable()
export class CredentialsService {
  private readonly mcpServers: ReadonlySet<string>;

  constructor(
    private readonly config: AppConfig,
    @InjectRepository(UpstreamCredential) private readonly rows: Repository<UpstreamCredential>,
    private readonly sealer: CredentialSealer,
    private readonly audit: AuditService,
    private readonly events: ClusterEvents,
    // Absent in the `ags` tool, which forwards nothing: the gateways hear its changes through ClusterEvents.
    @Optional() private readonly stored: StoredCredentials | null,
  ) {
    this.mcpServers = new Set(config.mcp.serversFile === undefined ? [] : readMcpServers(config.mcp.serversFile).map((server) => server.name));
  }

  async create(admin: AdminPrincipal, dto: CreateCredentialDto): Promise<CredentialView> {
    const route = this.routeOf(dto);
    const placementName = placementNameOf(dto);
    checkValue(dto.type, dto.value);
    const id = newId('cred');
    const { sealed, keyId } = this.sealed(id, admin.orgId, dto.value);
    const row = this.rows.create({ id, orgId: admin.orgId, routeKind: route.kind, route: route.name, placement: dto.type, placementName, sealed, keyId, forEdge: dto.edge ?? false, version: 1, rotatedAt: null, revokedAt: null });
    try {
      await this.rows.insert(row);
    } catch (error) {
      if (error instanceof QueryFailedError && (error.driverError as { code?: string }).code === '23505') {
        throw new AppError(ErrorCode.Conflict, `${describeRoute(route.kind, route.name)} already has an active credential: rotate or revoke it`);
      }
      throw error;
    }
    const saved = await this.rows.findOneByOrFail({ id });
    await this.announce(admin.orgId, id);
    this.audit.recordAdminEvent(admin, { action: 'credential.create', details: detailsOf(saved) });
    return toView(saved);
  }

  async list(admin: AdminPrincipal): Promise<CredentialView[]> {
    const rows = await this.rows.find({ where: { orgId: admin.orgId }, order: { createdAt: 'ASC' } });
    return rows.map(toView);
  }

  async get(admin: AdminPrincipal, id: string): Promise<CredentialView> {
    return toView(await this.getRow(admin, id));
  }

  /** Replaces the value; requests already forwarded keep the old one, every later one carries the new. */
  async rotate(admin: AdminPrincipal, id: string, dto: RotateCredentialDto): Promise<CredentialView> {
    const row = await this.getRow(admin, id);
    if (row.revokedAt !== null) throw new AppError(ErrorCode.Conflict, `Credential ${id} is revoked: create a new one`);
    checkValue(row.placement, dto.value);
    const { sealed, keyId } = this.sealed(id, admin.orgId, dto.value);
    const rotatedAt = new Date();
    const { affected } = await this.rows.update({ id, orgId: admin.orgId, revokedAt: IsNull(), version: row.version }, { sealed, keyId, rotatedAt, version: row.version + 1 });
    if (!affected) throw new AppError(ErrorCode.Conflict, `Credential ${id} changed meanwhile: retry`);
    await this.announce(admin.orgId, id);
    const rotated = { ...row, rotatedAt, version: row.version + 1 };
    this.audit.recordAdminEvent(admin, { action: 'credential.rotate', details: detailsOf(rotated) });
    return toView(rotated);
  }

  /** Stops injecting it at once on every instance, and forgets the value; revoking a revoked credential changes nothing. */
  async revoke(admin: AdminPrincipal, id: string): Promise<CredentialView> {
    const row = await this.getRow(admin, id);
    if (row.revokedAt !== null) return toView(row);
    const revokedAt = new Date();
    const { affected } = await this.rows.update({ id, orgId: admin.orgId, revokedAt: IsNull() }, { revokedAt, sealed: null, keyId: null });
    if (!affected) return toView(await this.getRow(admin, id));
    await this.announce(admin.orgId, id);
    this.audit.recordAdminEvent(admin, { action: 'credential.revoke', details: detailsOf(row) });
    return toView({ ...row, revokedAt });
  }

  /** The organization a credential belongs to (the `ags` tool names a credential by its id alone). */
  async orgOf(id: string): Promise<string> {
    const row = await this.rows.findOne({ where: { id }, select: { id: true, orgId: true } });
    if (row === null) throw AppError.notFound('Credential', id);
    return row.orgId;
  }

  private async getRow(admin: AdminPrincipal, id: string): Promise<UpstreamCredential> {
    const row = await this.rows.findOne({ where: { id, orgId: admin.orgId } });
    if (row === null) throw AppError.notFound('Credential', id);
    return row;
  }

  /** In force here before the answer, then on the other instances. */
  private async announce(orgId: string, credentialId: string): Promise<void> {
    await this.stored?.reload(credentialId);
    await this.events.publish({ type: 'credential.changed', orgId, credentialId });
  }

  private sealed(id: string, orgId: string, value: string): { sealed: Buffer; keyId: string } {
    try {
      return this.sealer.seal(id, orgId, value);
    } catch (error) {
      if (error instanceof KeyMissing) throw new AppError(ErrorCode.InvalidRequest, error.message);
      throw error;
    }
  }

  /** The route the credential is for, which must exist: a proxy route needs UPSTREAM_URL, an MCP server must be in MCP_SERVERS. */
  private routeOf(dto: CreateCredentialDto): { kind: 'proxy' | 'mcp'; name: string } {
    if ((dto.route === undefined) === (dto.mcpServer === undefined)) throw AppError.invalid('Give exactly one of route (`/proxy/<prefix>`) and mcpServer');
    if (dto.mcpServer !== undefined) {
      if (!this.mcpServers.has(dto.mcpServer)) {
        const known = [...this.mcpServers].join(', ');
        throw AppError.invalid(`No MCP server ${JSON.stringify(dto.mcpServer)}: ${known === '' ? 'MCP_SERVERS names none' : `MCP_SERVERS names ${known}`}`);
      }
      return { kind: 'mcp', name: dto.mcpServer };
    }
    const route = dto.route!;
    const target = route.startsWith(`${PROXY_PREFIX}/`) || route === PROXY_PREFIX ? parseProxyUrl(route) : 'a route is `/proxy` or `/proxy/<prefix>`';
    if (typeof target === 'string') throw AppError.invalid(`route ${JSON.stringify(route)}: ${target}`);
    if (target.query !== '' || route.includes('?')) throw AppError.invalid(`route ${JSON.stringify(route)}: a route has no query`);
    if (this.config.proxy.upstreamUrl === undefined) throw AppError.invalid(`No route ${route}: no upstream is behind /proxy (UPSTREAM_URL is not set)`);
    return { kind: 'proxy', name: target.path.replace(/\/+$/, '') };
  }
}

function placementNameOf(dto: CreateCredentialDto): string | null {
  if (dto.type === 'bearer') {
    if (dto.name !== undefined) throw AppError.invalid('name: a bearer credential goes in Authorization; name is for header and query credentials');
    return null;
  }
  if (dto.name === undefined) throw AppError.invalid(`name: required for a ${dto.type} credential (the ${dto.type === 'header' ? 'header' : 'query parameter'} it goes in)`);
  if (dto.type === 'header') {
    if (!HEADER_NAME.test(dto.name)) throw AppError.invalid(`name: ${JSON.stringify(dto.name)} is not a header name`);
    const lower = dto.name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || lower.startsWith('x-service-')) throw AppError.invalid(`name: ${dto.name} is a header the gateway sets itself`);
    return dto.name;
  }
  if (!QUERY_NAME.test(dto.name)) throw AppError.invalid(`name: ${JSON.stringify(dto.name)} is not a query parameter name (no &, =, #, ? or spaces)`);
  return dto.name;
}

/** A header value must not be able to split the request. The message never repeats the value. */
function checkValue(type: string, value: string): void {
  if (type !== 'query' && !HEADER_VALUE.test(value)) throw AppError.invalid('value: a header or bearer credential is visible ASCII, spaces and tabs only');
}

function describeRoute(kind: 'proxy' | 'mcp', name: string): string {
  return kind === 'proxy' ? `Route ${routeText(name)}` : `MCP server ${name}`;
}

function routeText(prefix: string): string {
  return prefix === '' ? PROXY_PREFIX : `${PROXY_PREFIX}/${prefix}`;
}

/** What an audit entry says of a credential: never its value. */
function detailsOf(row: UpstreamCredential): Record<string, unknown> {
  return { id: row.id, ...(row.routeKind === 'proxy' ? { route: routeText(row.route) } : { mcpServer: row.route }), type: row.placement, name: row.placementName, edge: row.forEdge, version: row.version };
}

function toView(row: UpstreamCredential): CredentialView {
  return {
    id: row.id,
    route: row.routeKind === 'proxy' ? routeText(row.route) : null,
    mcpServer: row.routeKind === 'mcp' ? row.route : null,
    type: row.placement,
    name: row.placementName,
    edge: row.forEdge,
    version: row.version,
    createdAt: row.createdAt.toISOString(),
    rotatedAt: row.rotatedAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
  };
}
