import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { isUniqueViolation } from '../../core/common/error-body';
import { ErrorCode } from '../../core/common/error-code';
import { OidcClientView, RegisterOidcClientDto } from './managed-identity.dto';
import { OidcClient } from './oidc-client.entity';
import { OidcVerifier } from './oidc-verifier';

/**
 * Which managed-identity clients act for an organization; each client id belongs to one
 * organization. Registering one takes a current token of that client (`proofToken`): only
 * whoever controls the managed identity can bind it, so no organization can claim another's
 * client first (docs/security.md).
 */
@Injectable()
export class OidcClientsService {
  constructor(
    @InjectRepository(OidcClient) private readonly clients: Repository<OidcClient>,
    private readonly verifier: OidcVerifier,
    private readonly audit: AuditService,
  ) {}

  async register(admin: AdminPrincipal, dto: RegisterOidcClientDto): Promise<OidcClientView> {
    await this.checkProof(dto);
    if (dto.agentId !== undefined) await this.checkAgent(admin, dto.agentId);
    const saved = this.clients.create({ clientId: dto.clientId, orgId: admin.orgId, description: dto.description ?? '', agentId: dto.agentId ?? null });
    // A plain INSERT, not save(): save() reads the row and then updates it when one is there, so
    // an organization registering the client id a moment after another took it over.
    await this.clients.insert(saved).catch((error: unknown) => {
      throw isUniqueViolation(error) ? new AppError(ErrorCode.Conflict, `managed identity client ${dto.clientId} is already registered`) : error;
    });
    this.verifier.forget(dto.clientId);
    this.audit.recordAdminEvent(admin, { action: 'oidc-client.register', details: { next: { clientId: saved.clientId, description: saved.description, agentId: saved.agentId } } });
    return toView(saved);
  }

  /** The agent must be one of the organization's own: a client never acts as another tenant's agent. */
  private async checkAgent(admin: AdminPrincipal, agentId: string): Promise<void> {
    const rows: unknown[] = await this.clients.manager.query('SELECT 1 FROM agents WHERE id = $1 AND org_id = $2', [agentId, admin.orgId]);
    if (rows.length === 0) throw AppError.invalid(`agentId: no agent ${agentId} in this organization`);
  }

  /** The proof token must be a valid token of the identity provider for this very client. */
  private async checkProof(dto: RegisterOidcClientDto): Promise<void> {
    let clientId: string;
    try {
      ({ clientId } = await this.verifier.verifyToken(dto.proofToken));
    } catch (error) {
      if (error instanceof AppError && error.code === ErrorCode.Unauthorized) throw AppError.invalid(`proofToken: ${error.message}`);
      throw error;
    }
    if (clientId !== dto.clientId) throw AppError.invalid(`proofToken is a token of client ${clientId}, not of ${dto.clientId}`);
  }

  async list(admin: AdminPrincipal): Promise<OidcClientView[]> {
    const rows = await this.clients.find({ where: { orgId: admin.orgId }, order: { createdAt: 'ASC', clientId: 'ASC' } });
    return rows.map(toView);
  }

  /** Removes the mapping: at once on this instance, within 30 s on others (their cache). */
  async remove(admin: AdminPrincipal, clientId: string): Promise<OidcClientView> {
    const row = await this.clients.findOne({ where: { clientId, orgId: admin.orgId } });
    if (row === null) throw AppError.notFound('managed identity client', clientId);
    await this.clients.delete({ clientId, orgId: admin.orgId });
    this.verifier.forget(clientId);
    this.audit.recordAdminEvent(admin, { action: 'oidc-client.remove', details: { previous: { clientId, description: row.description } } });
    return toView(row);
  }
}

function toView(row: OidcClient): OidcClientView {
  return { clientId: row.clientId, agentId: row.agentId ?? null, description: row.description, createdAt: row.createdAt.toISOString() };
}
