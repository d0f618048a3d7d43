import { Inject, Injectable } from '@nestjs/common';
import type { JWK } from 'jose';
import { Logger } from 'pino';
import { AuditService } from '../audit/audit.service';
import type { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { AppConfig } from '../../core/config/app-config';
import { StoredCredentials } from '../credentials/stored-credentials';
import { certifySidecarKey, EdgeGrant, okpPublicKey, sealedFor, sealToSidecar, sidecarKeysThumbprint } from '../../core/edge-protocol/edge-grant';
import { KeyRing } from '../signing-keys/key-ring';
import { LOGGER } from '../../core/logging/logging.module';
import { CallerCredentials } from '../organizations/caller-credentials';
import { SidecarGrantDto } from './bundles.dto';

/**
 * Grants to sidecars (docs/security.md "Sidecars"): a certificate of the sidecar's signing key
 * and the organization's edge credentials sealed to its sealing key. Only to a sidecar token, and
 * only for the keys that token first asked with: a copied token cannot fetch the credentials for
 * keys of its own. Every grant is an audit entry naming the sidecar, its keys and the credentials
 * (ids and versions, never values).
 */
@Injectable()
export class EdgeGrantsService {
  constructor(
    private readonly credentials: CallerCredentials,
    private readonly stored: StoredCredentials,
    private readonly keyRing: KeyRing,
    private readonly config: AppConfig,
    private readonly audit: AuditService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async grant(admin: AdminPrincipal, dto: SidecarGrantDto): Promise<EdgeGrant> {
    const signing = okpPublicKey(dto.signingKey, 'Ed25519', 'signingKey');
    if (typeof signing === 'string') throw AppError.invalid(signing);
    const sealing = okpPublicKey(dto.sealingKey, 'X25519', 'sealingKey');
    if (typeof sealing === 'string') throw AppError.invalid(sealing);
    // Only the checked public fields go on: whatever else the sidecar sent is left out.
    const keys: { signingKey: JWK; sealingKey: JWK } = { signingKey: { kty: 'OKP', crv: 'Ed25519', x: String(dto.signingKey.x) }, sealingKey: { kty: 'OKP', crv: 'X25519', x: String(dto.sealingKey.x) } };
    const thumbprint = sidecarKeysThumbprint(keys);
    await this.bind(admin, dto.sidecarId, thumbprint);
    const { certificate, expiresAt } = certifySidecarKey(this.keyRing.signingKey(), { issuer: this.config.http.publicUrl, sidecarId: dto.sidecarId, orgId: admin.orgId, signingKey: keys.signingKey });
    const credentials = this.stored.edgeCredentials(admin.orgId).map(({ route, credential, version }) => ({
      id: credential.id,
      version,
      route,
      placement: credential.placement,
      sealed: sealToSidecar(sealing, credential.value, sealedFor(credential.id, version, admin.orgId, dto.sidecarId)),
    }));
    this.audit.recordAdminEvent(admin, {
      action: 'sidecar.grant',
      details: { sidecarId: dto.sidecarId, keys: thumbprint, certificateExpiresAt: expiresAt.toISOString(), credentials: credentials.map(({ id, version }) => ({ id, version })) },
    });
    return { sidecarId: dto.sidecarId, orgId: admin.orgId, certificate, expiresAt: expiresAt.toISOString(), credentials };
  }

  /** Binds the sidecar token to these keys at its first grant; refuses any other keys after. */
  private async bind(admin: AdminPrincipal, sidecarId: string, thumbprint: string): Promise<void> {
    const row = await this.credentials.findActiveById('sidecar_token', admin.orgId, admin.tokenId);
    if (row === null) throw new AppError(ErrorCode.Forbidden, 'A sidecar grant (decision token certificate and edge credentials) is given to a sidecar token only: set the sidecar’s ADMIN_TOKEN to one (POST /admin/sidecar-tokens)');
    if (row.sidecarKeys === thumbprint) return;
    if (row.sidecarKeys === null) {
      if (await this.credentials.bindSidecarKeys(row.id, thumbprint, sidecarId)) return this.audit.recordAdminEvent(admin, { action: 'sidecar-token.bind', details: { sidecarTokenId: row.id, sidecarId, keys: thumbprint } });
      return this.bind(admin, sidecarId, thumbprint);
    }
    this.logger.warn({ sidecarTokenId: row.id, sidecarId, boundTo: row.sidecarId }, 'sidecar grant refused: the sidecar token is bound to other sidecar keys');
    this.audit.recordAdminEvent(admin, { action: 'sidecar.grant-refused', details: { sidecarTokenId: row.id, sidecarId, keys: thumbprint, boundTo: row.sidecarId } });
    throw new AppError(
      ErrorCode.Conflict,
      `Sidecar token ${row.id} is bound to the keys of sidecar ${row.sidecarId ?? '?'} (its first grant): a sidecar with new keys (a cleared CACHE_DIR) needs a new sidecar token`,
    );
  }
}
