import { KeyObject, verify } from 'node:crypto';
import path from 'node:path';
import type { Logger } from 'pino';
import type { TokenSigningKey } from '../core/decision/decision-token';
import { EdgeGrant, openSealed, sealedFor, SealedEdgeCredential } from '../core/edge-protocol/edge-grant';
import { CredentialIndex, InjectedCredential, UpstreamCredentials } from '../core/decision/upstream-credentials';
import { readFileIfExists, writeFileAtomic } from './atomic-file';
import type { BundleStore } from './bundle-store';
import type { GatewayLink } from './gateway-link';
import type { SidecarKeys } from './sidecar-keys';

const GRANT_FILE = 'edge-grant.json';
/** Fewest milliseconds between two grant requests that failed: a refusing gateway is not asked at every sync. */
const RETRY_GAP_MS = 30_000;

/** What /health says of the grant: never a value. */
export interface EdgeGrantState {
  certificateExpiresAt: string | null;
  credentials: string[];
  lastGrantError: string | null;
}

/**
 * The sidecar's grant (docs/security.md "Sidecars"): the gateway's certificate of its signing
 * key, which its decision tokens carry, and the edge credentials sealed to its key, opened here
 * and held in memory only (CACHE_DIR keeps the grant as it came, sealed). Asked for after a bundle
 * sync when there is none, when the certificate is past half its life, or when the bundle names
 * other credentials (created, rotated or revoked at the gateway). A credential the bundle in force
 * no longer names is not injected, also while no new grant can be had: cut off from its gateway,
 * the sidecar keeps only what its last bundle still lists, and signs tokens until its certificate
 * expires. Holds one entry per edge credential of the organization.
 */
export class EdgeGrants implements UpstreamCredentials {
  private grant: { certificate: string; expiresAtMs: number; issuedAtMs: number; credentials: Array<{ sealed: SealedEdgeCredential; value: string }> } | null = null;
  private index = new CredentialIndex();
  private lastError: string | null = null;
  private lastFailureMs = 0;
  private asking: Promise<void> | null = null;

  constructor(
    private readonly keys: SidecarKeys,
    private readonly store: BundleStore,
    private readonly link: GatewayLink,
    private readonly cacheDir: string,
    private readonly logger: Logger,
  ) {}

  forProxy(orgId: string, requestPath: string): InjectedCredential | undefined {
    return this.index.forProxy(orgId, requestPath);
  }

  forMcpServer(orgId: string, server: string): InjectedCredential | undefined {
    return this.index.forMcpServer(orgId, server);
  }

  /** The key decision tokens are signed with, with the certificate while one is valid (without it, upstream verifiers refuse them). */
  tokenKey(nowMs = Date.now()): TokenSigningKey {
    const certificate = this.grant !== null && this.grant.expiresAtMs > nowMs ? this.grant.certificate : undefined;
    return { privateKey: this.keys.signing, kid: this.keys.kid, alg: 'EdDSA', certificate };
  }

  state(): EdgeGrantState {
    return {
      certificateExpiresAt: this.grant === null ? null : new Date(this.grant.expiresAtMs).toISOString(),
      credentials: [...this.inForce()].map(({ sealed }) => sealed.id),
      lastGrantError: this.lastError,
    };
  }

  /** The cached grant, at start, once the cached bundle is in force. */
  async loadCached(): Promise<void> {
    const text = readFileIfExists(this.file());
    if (text === undefined) return;
    const problem = await this.apply(text);
    if (problem !== null) this.logger.warn({ problem }, 'cached sidecar grant not used; a new one is asked for at the next bundle sync');
  }

  /** After a bundle sync: a new grant when this one does not fit the bundle or ages. One request at a time. */
  async refresh(nowMs = Date.now()): Promise<void> {
    if (this.asking !== null || !this.needsGrant(nowMs)) return;
    if (this.lastError !== null && nowMs - this.lastFailureMs < RETRY_GAP_MS) return;
    this.asking = this.ask().finally(() => (this.asking = null));
    return this.asking;
  }

  /** The bundle in force changed: drop what it no longer names at once. */
  bundleChanged(): void {
    this.reindex();
  }

  private needsGrant(nowMs: number): boolean {
    const bundle = this.store.bundle;
    if (bundle === null) return false;
    if (this.grant === null) return true;
    if (nowMs > this.grant.issuedAtMs + (this.grant.expiresAtMs - this.grant.issuedAtMs) / 2) return true;
    const held = new Set(this.grant.credentials.map(({ sealed }) => `${sealed.id}@${sealed.version}`));
    const named = bundle.edgeCredentials ?? [];
    return named.length !== held.size || named.some((credential) => !held.has(`${credential.id}@${credential.version}`));
  }

  private async ask(): Promise<void> {
    const body = Buffer.from(JSON.stringify({ sidecarId: this.link.sidecarId, ...this.keys.publicKeys }));
    const answer = await this.link.post('/api/v1/sidecar/grant', [body]);
    const problem = answer === 'unreachable' ? 'gateway unreachable' : answer.status !== 200 ? `gateway answered ${answer.status}: ${messageOf(answer.text)}` : await this.apply(answer.text);
    if (problem === null) {
      writeFileAtomic(this.file(), (answer as { text: string }).text, 0o600);
      if (this.lastError !== null) this.logger.info('sidecar grant in force again');
      this.lastError = null;
      return;
    }
    if (problem !== this.lastError) this.logger.error({ problem }, 'no new sidecar grant: decision tokens and edge credentials stay as they were');
    this.lastError = problem;
    this.lastFailureMs = Date.now();
  }

  /** Puts a grant in force; the reason when it cannot be. */
  private async apply(text: string): Promise<string | null> {
    let grant: EdgeGrant;
    try {
      grant = JSON.parse(text) as EdgeGrant;
    } catch {
      return 'the grant is not JSON';
    }
    const bundle = this.store.bundle;
    if (bundle === null) return 'no bundle in force to check the grant against';
    if (grant.orgId !== bundle.orgId || grant.sidecarId !== this.link.sidecarId || !Array.isArray(grant.credentials)) return 'the grant is for another organization or sidecar';
    const certified = await this.certified(grant.certificate, bundle.orgId);
    if (typeof certified === 'string') return certified;
    const credentials: Array<{ sealed: SealedEdgeCredential; value: string }> = [];
    for (const sealed of grant.credentials) {
      const value = typeof sealed?.sealed === 'string' ? openSealed(this.keys.sealing, sealed.sealed, sealedFor(sealed.id, sealed.version, bundle.orgId, this.link.sidecarId)) : undefined;
      if (value === undefined) return `edge credential ${String(sealed?.id)} does not open with this sidecar's key`;
      credentials.push({ sealed, value });
    }
    this.grant = { certificate: grant.certificate, expiresAtMs: certified.expMs, issuedAtMs: certified.iatMs, credentials };
    this.reindex();
    return null;
  }

  /** The certificate's times when a key of the bundle signed it for this sidecar's own key and organization. */
  private async certified(certificate: unknown, orgId: string): Promise<{ iatMs: number; expMs: number } | string> {
    const parts = typeof certificate === 'string' ? certificate.split('.') : [];
    if (parts.length !== 3) return 'the certificate is not a compact JWS';
    let header: { alg?: unknown; kid?: unknown };
    let payload: { sub?: unknown; org?: unknown; iat?: unknown; exp?: unknown; cnf?: { jwk?: { x?: unknown } } };
    try {
      header = JSON.parse(Buffer.from(parts[0], 'base64url').toString()) as typeof header;
      payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString()) as typeof payload;
    } catch {
      return 'the certificate is not JSON';
    }
    const key = await this.store.verificationKey(typeof header.kid === 'string' ? header.kid : undefined);
    if (key === undefined || !signatureValid(`${parts[0]}.${parts[1]}`, parts[2], header.alg, key)) return 'the certificate is not signed by a key of the bundle';
    if (payload.sub !== this.link.sidecarId || payload.org !== orgId || payload.cnf?.jwk?.x !== this.keys.publicKeys.signingKey.x) return 'the certificate is for another sidecar or key';
    if (typeof payload.iat !== 'number' || typeof payload.exp !== 'number') return 'the certificate has no iat or exp';
    return { iatMs: payload.iat * 1000, expMs: payload.exp * 1000 };
  }

  /**
   * The grant's credentials the bundle in force still names. A rotated one keeps its previous
   * value until the new grant comes (a second, at the sync that saw the rotation): the upstream
   * takes both during a rotation, and requests in that moment are not sent without one. A revoked
   * one the bundle no longer names is dropped at once.
   */
  private *inForce(): Iterable<{ sealed: SealedEdgeCredential; value: string }> {
    const named = new Set((this.store.bundle?.edgeCredentials ?? []).map((credential) => credential.id));
    for (const held of this.grant?.credentials ?? []) if (named.has(held.sealed.id)) yield held;
  }

  private reindex(): void {
    const orgId = this.store.bundle?.orgId;
    const index = new CredentialIndex();
    if (orgId !== undefined) for (const { sealed, value } of this.inForce()) index.set(orgId, sealed.route, { id: sealed.id, placement: sealed.placement, value });
    this.index = index;
  }

  private file(): string {
    return path.join(this.cacheDir, GRANT_FILE);
  }
}

function signatureValid(input: string, signature: string, alg: unknown, key: KeyObject): boolean {
  try {
    const bytes = Buffer.from(signature, 'base64url');
    if (alg === 'EdDSA') return verify(null, Buffer.from(input), key, bytes);
    if (alg === 'ES256') return verify('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }, bytes);
  } catch {
    // A key of another kind.
  }
  return false;
}

/** The gateway's error message, bounded: it goes into logs and /health. */
function messageOf(text: string): string {
  try {
    const message = (JSON.parse(text) as { message?: unknown }).message;
    if (typeof message === 'string') return message.slice(0, 300);
  } catch {
    // Not the gateway's error body.
  }
  return text.slice(0, 100);
}
