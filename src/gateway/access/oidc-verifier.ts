import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { createRemoteJWKSet, decodeProtectedHeader, errors as joseErrors, JWTPayload, jwtVerify } from 'jose';
import { Repository } from 'typeorm';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../../core/config/app-config';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { OidcClient } from './oidc-client.entity';

/** Who a managed-identity token speaks for. */
export interface ManagedIdentity {
  orgId: string;
  /** The token's `sub`. */
  subject: string;
  /** The client the organization registered: `azp`, `appid` or `client_id`, else `sub`. */
  clientId: string;
  /** The token's `exp`, in ms since the epoch. */
  expiresMs: number;
}

/** The identity provider as its discovery document describes it. */
interface Provider {
  issuer: string;
  keys: ReturnType<typeof createRemoteJWKSet>;
}

// Asymmetric only: an HMAC token would be signed with a secret the provider never publishes.
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const FETCH_TIMEOUT_MS = 5000;
const JWKS_MAX_AGE_MS = 10 * 60 * 1000;
const CLIENT_CACHE_MS = 30_000;
const MAX_CACHED_CLIENTS = 10_000;

/**
 * Verifies bearer tokens of the managed-identity provider (OIDC_ISSUER): its discovery
 * document names the JWKS, whose keys are cached and fetched again for an unknown `kid` (at
 * most once per OIDC_JWKS_COOLDOWN); issuer, audience (OIDC_AUDIENCE) and expiry are checked.
 * The token's client id maps to the organization that registered it (POST /admin/oidc-clients);
 * a token alone never names its organization, so one tenant's client cannot act for another.
 */
@Injectable()
export class OidcVerifier {
  private provider: Promise<Provider> | undefined;
  private readonly clients = new LRUCache<string, { orgId: string | null; agentId: string | null; expiresMs: number }>({ max: MAX_CACHED_CLIENTS });

  constructor(
    private readonly config: AppConfig,
    @InjectRepository(OidcClient) private readonly registrations: Repository<OidcClient>,
  ) {}

  /** True when OIDC_ISSUER and OIDC_AUDIENCE are both set. */
  get configured(): boolean {
    return this.config.oidc.issuer !== undefined && this.config.oidc.audience !== undefined;
  }

  /** The organization and subject of a valid token (with or without `Bearer `), else a 401 AppError (503 if the provider is unreachable). */
  async verify(bearerToken: string): Promise<ManagedIdentity> {
    const { subject, clientId, expiresMs } = await this.verifyToken(bearerToken);
    const { orgId } = await this.registrationOf(clientId);
    if (orgId === null) {
      throw new AppError(ErrorCode.Unauthorized, `Managed identity client ${clientId} is not registered with an organization (POST /admin/oidc-clients)`);
    }
    return { orgId, subject, clientId, expiresMs };
  }

  /**
   * The client and subject of a valid token of the identity provider, whatever organization it
   * is registered with (none yet, at registration), else a 401 AppError (503 if unreachable).
   */
  async verifyToken(bearerToken: string, audience = this.config.oidc.audience): Promise<Omit<ManagedIdentity, 'orgId'>> {
    const { issuer } = this.config.oidc;
    if (issuer === undefined || audience === undefined) {
      throw new AppError(ErrorCode.Unauthorized, 'Managed identity is not configured on this gateway (OIDC_ISSUER and OIDC_AUDIENCE)');
    }
    const token = bearerToken.replace(/^bearer\s+/i, '').trim();
    const provider = await this.discover(issuer);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, provider.keys, { issuer: provider.issuer, audience, algorithms: ALGORITHMS, requiredClaims: ['sub', 'exp'] }));
    } catch (error) {
      throw rejection(error, token, provider.issuer, audience);
    }
    return { subject: payload.sub!, clientId: clientIdOf(payload), expiresMs: payload.exp! * 1000 };
  }

  /**
   * The agent a token of the identity provider acts as at an MCP server (docs/mcp.md,
   * "Authorization"): its audience must be that server's URL (RFC 8707), and its client
   * registered with an agent; a token for any other audience is refused (401).
   */
  async verifyForResource(bearerToken: string, resourceUrl: string): Promise<{ orgId: string; agentId: string; clientId: string }> {
    const { clientId } = await this.verifyToken(bearerToken, resourceUrl);
    const { orgId, agentId } = await this.registrationOf(clientId);
    if (orgId === null || agentId === null) {
      throw new AppError(ErrorCode.Unauthorized, `Managed identity client ${clientId} is not registered with an agent (POST /admin/oidc-clients with agentId)`);
    }
    return { orgId, agentId, clientId };
  }

  /** Drops a cached client mapping at once (registration or removal on this instance). */
  forget(clientId: string): void {
    this.clients.delete(clientId);
  }

  /**
   * The discovery document, fetched once. A failed fetch is tried again after the JWKS cooldown;
   * until then tokens fail fast with the same error rather than each waiting on the provider.
   */
  private discover(issuer: string): Promise<Provider> {
    this.provider ??= this.fetchProvider(issuer).catch((error: unknown) => {
      setTimeout(() => (this.provider = undefined), this.config.oidc.jwksCooldownMs).unref();
      throw error;
    });
    return this.provider;
  }

  private async fetchProvider(issuer: string): Promise<Provider> {
    const url = `${issuer}/.well-known/openid-configuration`;
    let document: { issuer?: unknown; jwks_uri?: unknown };
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), headers: { accept: 'application/json' } });
      if (!response.ok) throw new Error(`status ${response.status}`);
      document = (await response.json()) as typeof document;
    } catch (error) {
      throw unavailable(`its discovery document ${url} could not be read (${(error as Error).message})`);
    }
    // The env reader drops a trailing slash; providers that put one in `iss` (Auth0) still match.
    if (typeof document.issuer !== 'string' || document.issuer.replace(/\/+$/, '') !== issuer) {
      throw unavailable(`its discovery document names issuer ${JSON.stringify(document.issuer)}, not ${issuer}`);
    }
    if (typeof document.jwks_uri !== 'string' || !/^https?:\/\//.test(document.jwks_uri)) throw unavailable('its discovery document has no jwks_uri');
    const keys = createRemoteJWKSet(new URL(document.jwks_uri), {
      cooldownDuration: this.config.oidc.jwksCooldownMs,
      cacheMaxAge: JWKS_MAX_AGE_MS,
      timeoutDuration: FETCH_TIMEOUT_MS,
    });
    return { issuer: document.issuer, keys };
  }

  /** The registering organization, cached briefly (a removal elsewhere holds within 30 s). */
  private async registrationOf(clientId: string): Promise<{ orgId: string | null; agentId: string | null }> {
    const cached = this.clients.get(clientId);
    if (cached !== undefined && cached.expiresMs > Date.now()) return cached;
    const row = await this.registrations.findOne({ where: { clientId }, select: { clientId: true, orgId: true, agentId: true } });
    const registration = { orgId: row?.orgId ?? null, agentId: row?.agentId ?? null, expiresMs: Date.now() + CLIENT_CACHE_MS };
    this.clients.set(clientId, registration);
    return registration;
  }
}

/** Entra ID puts the client in `azp` (v2) or `appid` (v1); client-credentials tokens elsewhere use `client_id`. */
function clientIdOf(payload: JWTPayload): string {
  for (const claim of ['azp', 'appid', 'client_id']) {
    const value = payload[claim];
    if (typeof value === 'string' && value !== '') return value;
  }
  return payload.sub!;
}

function rejection(error: unknown, token: string, issuer: string, audience: string): AppError {
  if (error instanceof joseErrors.JWTExpired) return new AppError(ErrorCode.Unauthorized, 'Managed identity token has expired');
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return new AppError(ErrorCode.Unauthorized, `Managed identity token audience is not ${audience}`);
    if (error.claim === 'iss') return new AppError(ErrorCode.Unauthorized, `Managed identity token issuer is not ${issuer}`);
    return new AppError(ErrorCode.Unauthorized, `Managed identity token claim ${error.claim} is invalid: ${error.reason}`);
  }
  if (error instanceof joseErrors.JWKSNoMatchingKey) {
    return new AppError(ErrorCode.Unauthorized, `Managed identity token is signed with a key the identity provider does not publish (kid ${kidOf(token)})`);
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return new AppError(ErrorCode.Unauthorized, 'Managed identity token signature is invalid');
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return new AppError(ErrorCode.Unauthorized, 'Managed identity token must be signed with an asymmetric algorithm');
  if (error instanceof joseErrors.JWSInvalid || error instanceof joseErrors.JWTInvalid) return new AppError(ErrorCode.Unauthorized, 'Managed identity token is malformed');
  const keysUnreadable =
    !(error instanceof joseErrors.JOSEError) || error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid || error.code === 'ERR_JOSE_GENERIC';
  if (keysUnreadable) return unavailable(`its keys could not be read (${(error as Error).message})`);
  return new AppError(ErrorCode.Unauthorized, 'Managed identity token is invalid');
}

function kidOf(token: string): string {
  try {
    return (decodeProtectedHeader(token).kid ?? 'none').slice(0, 100);
  } catch {
    return 'none';
  }
}

function unavailable(why: string): AppError {
  return new AppError(ErrorCode.ServiceUnavailable, `The managed identity provider is unavailable: ${why}`);
}
