import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';
import { Logger } from 'pino';
import { AppConfig } from '../../core/config/app-config';
import type { CredentialKey } from '../../core/config/credential-keys';
import { ClusterEvents } from '../changes/cluster-events';
import { CredentialIndex, CredentialPlacement, CredentialRoute, InjectedCredential, UpstreamCredentials } from '../../core/decision/upstream-credentials';
import { LOGGER } from '../../core/logging/logging.module';
import { boundTo, openValue, sealValue } from './credential-cipher';
import { UpstreamCredential } from './upstream-credential.entity';

/** A credential marked for the edge, as the bundle seals it for a sidecar. */
export interface EdgeCredential {
  route: CredentialRoute;
  credential: InjectedCredential;
  /** The credential's version: a sealed value opens for this version only. */
  version: number;
}

/**
 * The active upstream credentials, decrypted in memory for the proxy and MCP (the port
 * UpstreamCredentials): loaded at start, where a value that does not decrypt with the configured
 * keys stops the gateway naming the variable, and reloaded row by row on every instance when one
 * changes (ClusterEvents). Rows sealed with CREDENTIALS_PREVIOUS_KEY are sealed again with the
 * current key at start, so a key rotation is a rolling restart (docs/operations.md). Holds one
 * entry per active credential; a lookup is CredentialIndex's.
 */
@Injectable()
export class StoredCredentials implements UpstreamCredentials, OnModuleInit {
  private index = new CredentialIndex();
  private edge = new Map<string, { orgId: string } & EdgeCredential>();
  /** The last load still in flight, of one row or of all: the next one starts once it settles. */
  private loading: Promise<void> = Promise.resolve();

  constructor(
    private readonly config: AppConfig,
    @InjectRepository(UpstreamCredential) private readonly rows: Repository<UpstreamCredential>,
    private readonly events: ClusterEvents,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.loadAll();
    this.events.subscribe((event) => {
      if (event.type === 'credential.changed') void this.reload(event.credentialId).catch((error: unknown) => this.logger.error({ err: error, credentialId: event.credentialId }, 'could not reload an upstream credential'));
      else if (event.type === 'resync') void this.serialized(() => this.loadAll()).catch((error: unknown) => this.logger.error({ err: error }, 'could not reload the upstream credentials'));
    });
  }

  forProxy(orgId: string, path: string): InjectedCredential | undefined {
    return this.index.forProxy(orgId, path);
  }

  forMcpServer(orgId: string, server: string): InjectedCredential | undefined {
    return this.index.forMcpServer(orgId, server);
  }

  /** The organization's credentials marked for the edge. */
  edgeCredentials(orgId: string): EdgeCredential[] {
    const found: EdgeCredential[] = [];
    for (const entry of this.edge.values()) if (entry.orgId === orgId) found.push({ route: entry.route, credential: entry.credential, version: entry.version });
    return found.sort((a, b) => (a.credential.id < b.credential.id ? -1 : 1));
  }

  /** Loads the row `id` again (created, rotated or revoked on some instance). */
  reload(id: string): Promise<void> {
    return this.serialized(() => this.readAndApply(id));
  }

  /**
   * Runs a load after the one before it has settled. A read begun before a change committed must
   * never land after that change's own reload and put the old value back in force: a row's reload
   * begun before its revocation committed (the create's own event, say), or a reload of all rows
   * (a `resync`) begun before a rotation committed, whose index would replace the one the
   * rotation's reload had just updated. Credentials change rarely, so one queue costs nothing.
   */
  private serialized(load: () => Promise<void>): Promise<void> {
    const next = this.loading.then(load);
    this.loading = next.catch(() => undefined);
    return next;
  }

  private async readAndApply(id: string): Promise<void> {
    const row = await this.rows.findOne({ where: { id } });
    if (row === null || row.revokedAt !== null || row.sealed === null) return this.forget(id);
    const value = this.open(row);
    if (value === undefined) {
      this.logger.error({ credentialId: id }, `upstream credential ${id} does not decrypt with ${keyNames(this.config)}: this instance keeps what it had; give it the key the other instances use`);
      return;
    }
    this.forget(id);
    this.add(row, value);
  }

  private forget(id: string): void {
    this.index.delete(id);
    this.edge.delete(id);
  }

  private async loadAll(): Promise<void> {
    const rows = await this.rows.find({ where: { revokedAt: IsNull() }, order: { createdAt: 'ASC' } });
    const opened: Array<[UpstreamCredential, string]> = [];
    const failed: string[] = [];
    for (const row of rows) {
      if (row.sealed === null) continue;
      const value = this.open(row);
      if (value === undefined) failed.push(row.id);
      else opened.push([row, value]);
    }
    if (failed.length > 0) throw new Error(undecryptable(this.config, failed));
    await this.sealAgain(opened);
    this.index = new CredentialIndex();
    this.edge = new Map();
    for (const [row, value] of opened) this.add(row, value);
  }

  /** Rows still sealed with CREDENTIALS_PREVIOUS_KEY, sealed with the current key (the value does not change). */
  private async sealAgain(opened: Array<[UpstreamCredential, string]>): Promise<void> {
    const { current, previous } = this.config.credentialKeys;
    if (current === undefined || previous === undefined) return;
    let count = 0;
    for (const [row, value] of opened) {
      if (row.keyId !== previous.id) continue;
      const sealed = sealValue(current, value, boundTo(row.id, row.orgId));
      const { affected } = await this.rows.update({ id: row.id, keyId: previous.id }, { sealed, keyId: current.id });
      if (affected) count++;
    }
    if (count > 0) this.logger.info({ count }, `upstream credentials sealed again with ${current.source} (were ${previous.source})`);
  }

  private open(row: UpstreamCredential): string | undefined {
    const key = this.keyFor(row.keyId);
    return key === undefined ? undefined : openValue(key, row.sealed!, boundTo(row.id, row.orgId));
  }

  private keyFor(keyId: string | null): CredentialKey | undefined {
    const { current, previous } = this.config.credentialKeys;
    if (current !== undefined && current.id === keyId) return current;
    if (previous !== undefined && previous.id === keyId) return previous;
    return undefined;
  }

  private add(row: UpstreamCredential, value: string): void {
    const route: CredentialRoute = row.routeKind === 'proxy' ? { kind: 'proxy', prefix: row.route } : { kind: 'mcp', server: row.route };
    const credential: InjectedCredential = { id: row.id, placement: placementOf(row), value };
    this.index.set(row.orgId, route, credential);
    if (row.forEdge) this.edge.set(row.id, { orgId: row.orgId, route, credential, version: row.version });
  }
}

export function placementOf(row: UpstreamCredential): CredentialPlacement {
  if (row.placement === 'bearer') return { type: 'bearer' };
  return { type: row.placement, name: row.placementName! };
}

function keyNames(config: AppConfig): string {
  const { current, previous } = config.credentialKeys;
  const names = [current?.source, previous?.source].filter((name) => name !== undefined);
  return names.length === 0 ? 'no key (CREDENTIALS_KEY_FILE and CREDENTIALS_KEY are unset)' : names.join(' or ');
}

function undecryptable(config: AppConfig, ids: string[]): string {
  const listed = ids.slice(0, 5).join(', ') + (ids.length > 5 ? `, and ${ids.length - 5} more` : '');
  return (
    `${ids.length} stored upstream credential(s) (${listed}) cannot be decrypted with ${keyNames(config)}: ` +
    'set CREDENTIALS_KEY_FILE (or CREDENTIALS_KEY) to the key they were stored with; during a key rotation, the old one as CREDENTIALS_PREVIOUS_KEY_FILE (docs/operations.md)'
  );
}
