import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';
import type { AdminPrincipal } from '../common/admin-principal';
import { KeyRing } from '../signing-keys/key-ring';
import { CANONICAL_TIERS, canonicalTier, TIER_NAMES } from '../../core/policy-engine/tiers';
import type { PolicyDefinition } from '../../core/policy-engine/types';
import type { CanaryRollout } from '../../core/decision/canary-cohort';
import { labelsMatch, SidecarLabels } from '../../core/edge-protocol/sidecar-protocol';
import { BUNDLE_FORMAT, BundleAgent, BundleContent, BundleTiers, BundleToolPin, contentTag, SignedBundle, signBundle } from '../../core/edge-protocol/bundle-format';

/** A bundle ready to serve, with the tag `If-None-Match` compares against. */
export interface ServedBundle {
  etag: string;
  version: string;
  /** Absent when the caller already holds this content (304). */
  bundle?: SignedBundle;
}

interface ToolPinRow {
  server: string;
  tool: string;
  pinned_hash: string;
  pinned_definition: BundleToolPin['definition'];
  pinned_at: Date;
}

interface AgentRow {
  id: string;
  name: string;
  trust_tier: string;
  tags: string[];
  updated_at: Date;
  revoked_at: Date | null;
}

const TIERS: BundleTiers = {
  order: [...CANONICAL_TIERS],
  aliases: Object.fromEntries(TIER_NAMES.map((name) => [name, canonicalTier(name)!])),
};

/**
 * Builds an organization's signed bundle for edge sidecars (docs/architecture.md "Edge
 * sidecar") from the same rows the gateway decides on. Its version is the time of the newest
 * change it reflects (policy version, agent update or revocation, signing key, API key, MCP tool pin, edge credential), so it only
 * grows and is the same for the same content; the ETag is a hash of the content.
 */
@Injectable()
export class BundlesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly keyRing: KeyRing,
    private readonly config: AppConfig,
  ) {}

  /**
   * The organization's bundle, signed; without the body when `ifNoneMatch` names its content.
   * `labels`: the fetching sidecar's (X-Sidecar-Labels), which say whether a rollout to labelled
   * sidecars sends it its new version.
   */
  async bundle(admin: AdminPrincipal, ifNoneMatch?: string, labels: SidecarLabels = {}): Promise<ServedBundle> {
    const content = await this.content(admin.orgId, labels);
    const etag = contentTag(content);
    if (ifNoneMatch !== undefined && ifNoneMatch.split(',').some((tag) => tag.trim() === etag || tag.trim() === '*')) return { etag, version: content.version };
    return { etag, version: content.version, bundle: signBundle(content, this.keyRing.signingKey()) };
  }

  private async content(orgId: string, labels: SidecarLabels): Promise<BundleContent> {
    const [policies, canary, policyVersion, agents, keys, apiKeys, toolPins, edgeCredentials] = await Promise.all([
      this.policies(orgId),
      this.canary(orgId, labels),
      this.policyVersion(orgId),
      this.agents(orgId),
      this.keyRing.publishedKeys(),
      this.apiKeys(orgId),
      this.toolPins(orgId),
      this.edgeCredentials(orgId),
    ]);
    const keyTimes = await this.keyTimes(keys.map((key) => key.kid).filter((kid): kid is string => typeof kid === 'string'));
    const times = [
      policyVersion.at,
      ...agents.flatMap((agent) => [agent.updated_at, agent.revoked_at]),
      ...keyTimes,
      ...apiKeys.flatMap((key) => [key.created_at, key.revoked_at]),
      ...toolPins.map((pin) => pin.pinned_at),
      ...edgeCredentials.flatMap((credential) => [credential.created_at, credential.rotated_at, credential.revoked_at]),
    ];
    return {
      format: BUNDLE_FORMAT,
      orgId,
      version: newest(times),
      policyVersion: policyVersion.version,
      policies,
      ...(canary === undefined ? {} : { canary }),
      tiers: TIERS,
      agents: agents.map(toBundleAgent),
      revoked: agents.filter((agent) => agent.revoked_at !== null).map((agent) => agent.id),
      keys: [...keys].sort((a, b) => String(a.kid).localeCompare(String(b.kid))),
      apiKeys: apiKeys.filter((key) => key.revoked_at === null).map((key) => ({ id: key.id, hash: key.key_hash })),
      toolPins: toolPins.map((pin) => ({ server: pin.server, tool: pin.tool, hash: pin.pinned_hash, definition: pin.pinned_definition })),
      edgeCredentials: edgeCredentials.filter((credential) => credential.revoked_at === null).map((credential) => ({ id: credential.id, version: credential.version })),
      tokenIssuer: this.config.http.publicUrl,
      gatewayMode: this.config.mode,
    };
  }

  private async policies(orgId: string): Promise<PolicyDefinition[]> {
    const rows: Array<{ definition: PolicyDefinition }> = await this.dataSource.query('SELECT definition FROM policies WHERE org_id = $1 ORDER BY position', [orgId]);
    return rows.map((row) => row.definition);
  }

  /**
   * The running rollout (docs/policies.md "Canary rollouts"): for a share, the sidecar draws the
   * same cohorts; a rollout to labelled sidecars carries its new version only to the sidecars its
   * labels select, and to the others only its name, so their decisions count as the stable
   * cohort. Its start and end take policy versions, so the version reflects it.
   */
  private async canary(orgId: string, labels: SidecarLabels): Promise<CanaryRollout | undefined> {
    const rows: Array<{ id: string; policy_name: string; share: number | null; sidecar_labels: Record<string, string> | null; definition: PolicyDefinition }> = await this.dataSource.query(
      `SELECT id, policy_name, share, sidecar_labels, definition FROM policy_canaries WHERE org_id = $1 AND state = 'running'`,
      [orgId],
    );
    if (rows.length === 0) return undefined;
    const [row] = rows;
    if (row.share !== null) return { id: row.id, policy: row.policy_name, share: row.share, definition: row.definition };
    const sidecarLabels = row.sidecar_labels ?? {};
    return { id: row.id, policy: row.policy_name, sidecarLabels, ...(labelsMatch(sidecarLabels, labels) ? { definition: row.definition } : {}) };
  }

  private async policyVersion(orgId: string): Promise<{ version: number; at: Date | null }> {
    const rows: Array<{ version: string | null; at: Date | null }> = await this.dataSource.query(
      'SELECT max(version) AS version, max(created_at) AS at FROM policy_versions WHERE org_id = $1',
      [orgId],
    );
    return { version: Number(rows[0]?.version ?? 0), at: rows[0]?.at ?? null };
  }

  private agents(orgId: string): Promise<AgentRow[]> {
    return this.dataSource.query('SELECT id, name, trust_tier, tags, updated_at, revoked_at FROM agents WHERE org_id = $1 ORDER BY id', [orgId]);
  }

  /** Revoked keys too: their revocation time is a change the version must reflect. */
  private apiKeys(orgId: string): Promise<Array<{ id: string; key_hash: string; created_at: Date; revoked_at: Date | null }>> {
    return this.dataSource.query("SELECT id, secret_hash AS key_hash, created_at, revoked_at FROM caller_credentials WHERE kind = 'api_key' AND org_id = $1 ORDER BY id", [orgId]);
  }

  /** Pins only: a held definition is not in force (the sidecar holds every definition but the pinned one). */
  private toolPins(orgId: string): Promise<ToolPinRow[]> {
    return this.dataSource.query('SELECT server, tool, pinned_hash, pinned_definition, pinned_at FROM mcp_tool_pins WHERE org_id = $1 ORDER BY server, tool', [orgId]);
  }

  /** Revoked ones too: their revocation time is a change the version must reflect. */
  private edgeCredentials(orgId: string): Promise<Array<{ id: string; version: number; created_at: Date; rotated_at: Date | null; revoked_at: Date | null }>> {
    return this.dataSource.query('SELECT id, version, created_at, rotated_at, revoked_at FROM upstream_credentials WHERE org_id = $1 AND for_edge ORDER BY id', [orgId]);
  }

  private async keyTimes(kids: string[]): Promise<Date[]> {
    if (kids.length === 0) return [];
    const rows: Array<{ created_at: Date }> = await this.dataSource.query('SELECT created_at FROM signing_keys WHERE kid = ANY($1)', [kids]);
    return rows.map((row) => row.created_at);
  }
}

function toBundleAgent(row: AgentRow): BundleAgent {
  return { id: row.id, name: row.name, trustTier: row.trust_tier, tags: [...row.tags], revoked: row.revoked_at !== null };
}

/** ISO time of the newest of `times` (the epoch when there is none). */
function newest(times: ReadonlyArray<Date | string | null>): string {
  let max = 0;
  for (const time of times) {
    if (time === null) continue;
    const ms = new Date(time).getTime();
    if (ms > max) max = ms;
  }
  return new Date(max).toISOString();
}
