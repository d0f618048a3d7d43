import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { KeyObject } from 'node:crypto';
import { MoreThan, Repository } from 'typeorm';
import { importJWK, JWK } from 'jose';
import { Logger } from 'pino';
import { AppConfig } from '../../core/config/app-config';
import { LOGGER } from '../../core/logging/logging.module';
import { SigningKey } from './signing-key.entity';
import { loadOrCreateSigningKey, SigningKeyMaterial } from './signing-key-file';

/** Unknown kids read the database at most this often, however many arrive. */
const MIN_REFRESH_INTERVAL_MS = 1_000;
const TOUCH_INTERVAL_MS = 60 * 60 * 1000;

/**
 * This instance's signing key plus the public keys of every key any instance signed with
 * recently, so tokens stay verifiable across a rotation and across instances.
 */
@Injectable()
export class KeyRing implements OnModuleInit {
  private current: SigningKeyMaterial;
  private readonly verifiers = new Map<string, KeyObject>();
  private lastRefreshMs = 0;
  private scheduledRefresh: Promise<void> | null = null;
  private touchedMs = 0;

  constructor(
    private readonly config: AppConfig,
    @InjectRepository(SigningKey) private readonly keys: Repository<SigningKey>,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    this.current = await loadOrCreateSigningKey(this.config.auth.signingKeyFile);
    this.verifiers.set(this.current.kid, this.current.publicKey);
    await this.touch();
    await this.refresh();
  }

  /** The key new tokens and bundles are signed with. */
  signingKey(): SigningKeyMaterial {
    if (Date.now() - this.touchedMs > TOUCH_INTERVAL_MS) void this.touch().catch((error: unknown) => this.touchFailed(error));
    return this.current;
  }

  /** The public key for a `kid`, looking in the database (at most once a second) when it is unknown here. */
  async verificationKey(kid: string | undefined): Promise<KeyObject | undefined> {
    if (kid === undefined) return undefined;
    const known = this.verifiers.get(kid);
    if (known !== undefined) return known;
    await this.refreshAfter();
    return this.verifiers.get(kid);
  }

  /**
   * A database read that starts after this call, shared by every unknown kid waiting for it and
   * no sooner than a second after the last. Refusing unknown kids for 10 s after a lookup, as
   * before, refused the tokens of an instance started within 10 s of another (a rolling deploy);
   * made-up kids still cost one query a second.
   */
  private refreshAfter(): Promise<void> {
    if (this.scheduledRefresh !== null) return this.scheduledRefresh;
    const wait = Math.max(0, this.lastRefreshMs + MIN_REFRESH_INTERVAL_MS - Date.now());
    this.scheduledRefresh = new Promise<void>((resolve) => setTimeout(resolve, wait)).then(() => {
      this.scheduledRefresh = null;
      return this.refresh();
    });
    return this.scheduledRefresh;
  }

  /**
   * Public keys to publish at /.well-known/jwks.json: those used within a token lifetime, and
   * those that signed a longer-lived token still unexpired.
   */
  async publishedKeys(): Promise<JWK[]> {
    const now = Date.now();
    const since = new Date(now - this.config.auth.agentTokenTtlMs - TOUCH_INTERVAL_MS);
    const rows = await this.keys.find({ where: [{ lastUsedAt: MoreThan(since) }, { validUntil: MoreThan(new Date(now)) }], order: { createdAt: 'ASC' } });
    return rows.map((row) => row.publicJwk);
  }

  /**
   * Keeps key `kid` published until `expiresAt` when its last use does not cover that (a token
   * issued with a lifetime past AGENT_TOKEN_TTL): otherwise, once the key is retired, fresh
   * instances, sidecars and JWKS readers would refuse the token before it expires.
   */
  async publishUntil(kid: string, expiresAt: Date): Promise<void> {
    if (expiresAt.getTime() <= this.touchedMs + this.config.auth.agentTokenTtlMs + TOUCH_INTERVAL_MS) return;
    await this.keys.query('UPDATE signing_keys SET valid_until = GREATEST(valid_until, $2) WHERE kid = $1', [kid, expiresAt]);
  }

  private async refresh(): Promise<void> {
    this.lastRefreshMs = Date.now();
    for (const jwk of await this.publishedKeys()) {
      if (typeof jwk.kid !== 'string' || this.verifiers.has(jwk.kid)) continue;
      this.verifiers.set(jwk.kid, (await importJWK(jwk, jwk.alg)) as KeyObject);
    }
  }

  /**
   * Signing goes on (the key is published for a token lifetime after its last recorded use);
   * the next signature records the use again, rather than an hour later.
   */
  private touchFailed(error: unknown): void {
    this.touchedMs = 0;
    this.logger.warn({ err: error, kid: this.current.kid }, 'could not record the signing key’s use; retrying at the next signature');
  }

  /**
   * Registers the key, or records its use: one statement, since instances sharing a key file
   * start together (a read, then an insert, let two of them insert the same kid, and the second
   * start failed on the duplicate).
   */
  private async touch(): Promise<void> {
    this.touchedMs = Date.now();
    await this.keys.query(
      `INSERT INTO signing_keys (kid, public_jwk, last_used_at) VALUES ($1, $2, $3)
       ON CONFLICT (kid) DO UPDATE SET last_used_at = GREATEST(signing_keys.last_used_at, EXCLUDED.last_used_at)`,
      [this.current.kid, JSON.stringify(this.current.publicJwk), new Date()],
    );
  }
}
