import fs from 'node:fs';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import type { Logger } from 'pino';
import { BundleContent, BundleToolPin, bundleSignatureProblem, isNewerVersion, publicKeyOf, publicKeyOfText, SignedBundle, signerJwk } from '../core/edge-protocol/bundle-format';
import { AgentSnapshot, AgentSource, agentSnapshot, LoadedPolicies, PolicySource, VerificationKeySource } from '../core/decision/decision-sources';
import { JwkSet } from './jwk-set';
import { compilePolicies } from '../core/policy-engine/compile-policies';
import { loadCanary } from '../core/decision/canary-cohort';
import { labelsMatch, SidecarLabels } from '../core/edge-protocol/sidecar-protocol';
import { formatPolicyError, PolicyLoadError } from '../core/policy-engine/errors';
import { readFileIfExists, writeFileAtomic } from './atomic-file';

const BUNDLE_FILE = 'bundle.json';
const PINNED_KEY_FILE = 'gateway-key.json';
/** The newest bundle version this sidecar applied, apart from bundle.json (docs/sidecar.md "Rollback"). */
export const HIGH_WATER_FILE = 'bundle-high-water.json';

/** What HIGH_WATER_FILE holds: the organization and version of the newest bundle applied. */
interface HighWater {
  orgId: string;
  version: string;
}
/**
 * How far ahead of this sidecar's clock a bundle's version may be. Versions are the gateway's
 * change times, so a genuine one is at most clock skew ahead; one far ahead, once in force, would
 * make every genuine bundle look older and lock them out until that date.
 */
export const MAX_VERSION_AHEAD_MS = 5 * 60 * 1000;

/** The bundle in force, ready for decisions. */
interface ActiveBundle {
  bundle: SignedBundle;
  etag: string | null;
  policies: LoadedPolicies;
  agents: ReadonlyMap<string, AgentSnapshot>;
  keys: JwkSet;
  /** SHA-256 hex of the organization's live adapter API keys. */
  apiKeyHashes: ReadonlySet<string>;
  /** The organization's pinned MCP tools, by toolPinKey(server, tool). */
  toolPins: ReadonlyMap<string, BundleToolPin>;
  /** When this sidecar applied it (from the cache: when it was loaded). */
  appliedAtMs: number;
  /** The newest applied bundle the pinned key signed (this one, when it did): the keys it lists may sign bundles too. */
  anchor: SignedBundle;
}

/** What bundle.json holds: the bundle, and its anchor when another instance's key signed it. */
interface CachedBundle {
  bundle: unknown;
  etag?: string | null;
  anchor?: unknown;
}

/** What became of a bundle offered to the store. */
export type Offer = { applied: true } | { applied: false; reason: string };

/**
 * The sidecar's sources for the decision core, from the one signed bundle in force: compiled
 * policies, agents with their revocation flags, and the public keys agent tokens verify with.
 *
 * A bundle is applied only if it is newer than the one in force, its version is at most
 * MAX_VERSION_AHEAD_MS ahead of this sidecar's clock, and its signature verifies against the
 * pinned gateway key: BUNDLE_PUBLIC_KEY (then nothing in CACHE_DIR can change whom the sidecar
 * trusts), else the key that signed the first bundle this sidecar accepted (trust on first use),
 * kept in CACHE_DIR and warned about at every start; or against a key listed by the
 * newest bundle the pinned key signed (its anchor): gateway instances each sign with their own
 * key and every bundle lists every instance's key, so a sidecar behind several instances takes
 * the bundles of all of them, not only of the one it met first. It is written to CACHE_DIR
 * atomically before it takes effect, so a restart starts from it. With no valid bundle there is
 * nothing to decide with: the sidecar fails closed and says why (`failure`).
 */
export class BundleStore implements PolicySource, VerificationKeySource {
  private active: ActiveBundle | null = null;
  private pinned: KeyObject | null;
  private pinnedFromEnv: boolean;
  private problem = 'no bundle yet: the gateway has not been reached and CACHE_DIR holds none';
  private highWater: HighWater | null;

  constructor(
    private readonly cacheDir: string,
    configuredKey: KeyObject | undefined,
    private readonly logger: Logger,
    /** SIDECAR_LABELS: a rollout to labelled sidecars decides every agent here on its new version only when they match its selector. */
    private readonly labels: SidecarLabels = {},
  ) {
    fs.mkdirSync(cacheDir, { recursive: true });
    this.pinnedFromEnv = configuredKey !== undefined;
    this.pinned = configuredKey ?? this.readPinnedKey();
    this.highWater = readHighWater(path.join(cacheDir, HIGH_WATER_FILE));
    if (configuredKey === undefined) {
      logger.warn(
        { pinnedKeyFile: path.join(cacheDir, PINNED_KEY_FILE), pinned: this.pinned !== null },
        'BUNDLE_PUBLIC_KEY is not set: bundles are trusted from the gateway key pinned in CACHE_DIR (trust on first use), which whoever can write CACHE_DIR can replace; set BUNDLE_PUBLIC_KEY to the gateway public key',
      );
    }
  }

  /** Loads the cached bundle, if there is one and it verifies. */
  async loadCached(): Promise<Offer> {
    const text = readFileIfExists(path.join(this.cacheDir, BUNDLE_FILE));
    if (text === undefined) return { applied: false, reason: 'no cached bundle' };
    let parsed: CachedBundle | null;
    try {
      parsed = JSON.parse(text) as CachedBundle | null;
    } catch {
      return this.refuse('cache', 'cached bundle is not valid JSON');
    }
    if (typeof parsed !== 'object' || parsed === null) return this.refuse('cache', 'cached bundle is not a JSON object');
    return this.offer(parsed.bundle, parsed.etag ?? null, 'cache', this.pinnedSigned(parsed.anchor));
  }

  /**
   * Applies `candidate` if it is newer and verifies; otherwise logs and keeps what is in force.
   * `anchor`: the bundle whose keys may have signed it (default: the anchor of the one in force).
   */
  async offer(candidate: unknown, etag: string | null, from: 'gateway' | 'cache', anchor = this.active?.anchor): Promise<Offer> {
    const vouched = this.vouchedAnchor(candidate, anchor);
    if (typeof vouched === 'string') return this.refuse(from, vouched);
    const bundle = candidate as SignedBundle;
    const nowMs = Date.now();
    if (Date.parse(bundle.version) - nowMs > MAX_VERSION_AHEAD_MS) {
      return this.refuse(from, `version ${bundle.version} is more than ${MAX_VERSION_AHEAD_MS / 60_000} minutes ahead of this sidecar's clock (${new Date(nowMs).toISOString()})`);
    }
    const current = this.active?.bundle;
    // The gateway serves the organization of ADMIN_TOKEN: a bundle of another one in force came
    // from the cache of an earlier token and must go, whatever the versions.
    const otherOrganization = current !== undefined && current.orgId !== bundle.orgId;
    if (otherOrganization && from === 'cache') return this.refuse(from, `bundle of organization ${bundle.orgId}, not ${current.orgId}`);
    if (current !== undefined && !otherOrganization && !isNewerVersion(bundle.version, current.version)) {
      if (bundle.version === current.version) return { applied: false, reason: 'same version' };
      return this.refuse(from, `version ${bundle.version} is older than ${current.version} in force`);
    }
    const mark = this.highWater;
    if (mark !== null && mark.orgId === bundle.orgId && isNewerVersion(mark.version, bundle.version)) {
      return this.refuse(from, `version ${bundle.version} is older than ${mark.version}, the newest this sidecar applied (${HIGH_WATER_FILE} in CACHE_DIR): a rolled-back bundle is never taken`);
    }
    let active: ActiveBundle;
    try {
      active = await activate(bundle, etag, vouched, this.labels);
    } catch (error) {
      return this.refuse(from, error instanceof PolicyLoadError ? `policies do not compile: ${error.errors.map(formatPolicyError).join('; ')}` : `unusable: ${(error as Error).message}`);
    }
    if (from === 'gateway') writeFileAtomic(path.join(this.cacheDir, BUNDLE_FILE), JSON.stringify({ etag, bundle, ...(vouched !== bundle ? { anchor: vouched } : {}) }));
    this.raiseHighWater(bundle);
    if (this.pinned === null) this.pin(signerJwk(bundle)!);
    if (otherOrganization) {
      this.logger.warn(
        { cachedOrganization: current.orgId, organization: bundle.orgId },
        'the gateway serves another organization to ADMIN_TOKEN than the cached bundle held: discarded the cached bundle and applied the fetched one',
      );
    }
    this.active = active;
    this.logger.info({ version: bundle.version, policies: bundle.policies.length, agents: bundle.agents.length, from }, 'bundle applied');
    return { applied: true };
  }

  /** Why nothing can be decided, or null when a bundle is in force. */
  get failure(): string | null {
    return this.active === null ? this.problem : null;
  }

  get bundle(): BundleContent | null {
    return this.active?.bundle ?? null;
  }

  get etag(): string | null {
    return this.active?.etag ?? null;
  }

  get appliedAtMs(): number | null {
    return this.active?.appliedAtMs ?? null;
  }

  get tokenIssuer(): string {
    return this.active?.bundle.tokenIssuer ?? '';
  }

  /** The bundle's policies: a sidecar serves the one organization its bundle is of. */
  get(_orgId: string): Promise<LoadedPolicies> {
    if (this.active === null) return Promise.reject(new Error(`no valid bundle: ${this.problem}`));
    return Promise.resolve(this.active.policies);
  }

  /** Told when a request names an agent or API key the bundle in force does not hold (BundleSync fetches early). */
  onUnknownCredential: () => void = () => undefined;

  /** The agent source, apart from the policy source's `get`. */
  readonly agentSource: AgentSource = { get: (agentId: string) => Promise.resolve(this.agent(agentId)) };

  /** True when `hash` (SHA-256 hex of an X-Api-Key) is one of the bundle's live API keys. */
  hasApiKey(hash: string): boolean {
    const active = this.active;
    if (active === null) return false;
    if (active.apiKeyHashes.has(hash)) return true;
    this.onUnknownCredential();
    return false;
  }

  /** The pin of `tool` of MCP server `server` in the bundle in force, if it has one. */
  toolPin(server: string, tool: string): BundleToolPin | undefined {
    return this.active?.toolPins.get(toolPinKey(server, tool));
  }

  private agent(agentId: string): AgentSnapshot | null {
    const active = this.active;
    if (active === null) return null;
    const agent = active.agents.get(agentId);
    if (agent !== undefined) return agent;
    this.onUnknownCredential();
    return null;
  }

  verificationKey(kid: string | undefined): Promise<KeyObject | undefined> {
    return this.active?.keys.verificationKey(kid) ?? Promise.resolve(undefined);
  }

  /**
   * Records `bundle` as the newest applied, after bundle.json is written: a crash between the two
   * leaves the mark lower than the cache, never above it.
   */
  private raiseHighWater(bundle: SignedBundle): void {
    const mark = this.highWater;
    if (mark !== null && mark.orgId === bundle.orgId && !isNewerVersion(bundle.version, mark.version)) return;
    this.highWater = { orgId: bundle.orgId, version: bundle.version };
    writeFileAtomic(path.join(this.cacheDir, HIGH_WATER_FILE), JSON.stringify(this.highWater));
  }

  private refuse(from: 'gateway' | 'cache', reason: string): Offer {
    this.logger.warn({ from, reason }, 'bundle refused');
    if (this.active === null) this.problem = `${from === 'cache' ? 'cached' : 'fetched'} bundle refused: ${reason}`;
    return { applied: false, reason };
  }

  /**
   * The anchor `candidate` is applied with, or why it is refused: the candidate itself when the
   * pinned key signed it, else `anchor` when one of the keys it lists did.
   */
  private vouchedAnchor(candidate: unknown, anchor: SignedBundle | undefined): SignedBundle | string {
    const key = this.pinned ?? this.firstUseKey(candidate);
    if (typeof key === 'string') return key;
    const problem = bundleSignatureProblem(candidate, key);
    if (problem === null) return candidate as SignedBundle;
    const listed = anchor === undefined ? undefined : listedKey(anchor, signatureKid(candidate));
    return listed !== undefined && bundleSignatureProblem(candidate, listed) === null ? anchor! : problem;
  }

  /** A cached anchor, if the pinned key signed it. */
  private pinnedSigned(anchor: unknown): SignedBundle | undefined {
    if (anchor === undefined || this.pinned === null) return undefined;
    return bundleSignatureProblem(anchor, this.pinned) === null ? (anchor as SignedBundle) : undefined;
  }

  /** With nothing pinned: the key the bundle names among its own keys, or why there is none. */
  private firstUseKey(candidate: unknown): KeyObject | string {
    const bundle = candidate as Partial<SignedBundle> | null;
    if (typeof bundle !== 'object' || bundle === null || typeof bundle.signature !== 'object' || !Array.isArray(bundle.keys)) return 'unsigned';
    const jwk = signerJwk(bundle as SignedBundle);
    if (jwk === undefined) return 'the signing key is not among the bundle’s keys';
    try {
      return publicKeyOf(jwk);
    } catch {
      return 'the signing key is not a valid public key';
    }
  }

  private pin(jwk: JWK): void {
    const { d: _private, ...publicJwk } = jwk;
    writeFileAtomic(path.join(this.cacheDir, PINNED_KEY_FILE), JSON.stringify(publicJwk));
    this.pinned = publicKeyOf(publicJwk);
    this.logger.info({ kid: jwk.kid }, 'gateway bundle key pinned (trust on first use); set BUNDLE_PUBLIC_KEY to pin it explicitly');
  }

  private readPinnedKey(): KeyObject | null {
    const text = readFileIfExists(path.join(this.cacheDir, PINNED_KEY_FILE));
    return text === undefined ? null : parseKey(text, path.join(this.cacheDir, PINNED_KEY_FILE));
  }

  /** Whether the pinned key came from BUNDLE_PUBLIC_KEY (else from the first bundle, or none yet). */
  get keyPinning(): 'configured' | 'first-use' | 'none' {
    if (this.pinnedFromEnv) return 'configured';
    return this.pinned === null ? 'none' : 'first-use';
  }
}

async function activate(bundle: SignedBundle, etag: string | null, anchor: SignedBundle, labels: SidecarLabels): Promise<ActiveBundle> {
  const set = compilePolicies(bundle.policies, { namespace: bundle.orgId });
  // The gateway sends a rollout's new version only to the sidecars it selects; the labels are checked here again, since a cached bundle may be from before a restart with other labels.
  const selected = bundle.canary?.sidecarLabels !== undefined && labelsMatch(bundle.canary.sidecarLabels, labels);
  const canary = bundle.canary === undefined ? undefined : loadCanary(bundle.policies, bundle.canary, bundle.orgId, selected);
  const revoked = new Set(bundle.revoked);
  const agents = new Map<string, AgentSnapshot>();
  for (const agent of bundle.agents) {
    agents.set(agent.id, agentSnapshot({ ...agent, orgId: bundle.orgId, revoked: agent.revoked || revoked.has(agent.id) }));
  }
  const apiKeyHashes = new Set((bundle.apiKeys ?? []).map((key) => key.hash));
  const toolPins = new Map((bundle.toolPins ?? []).map((pin) => [toolPinKey(pin.server, pin.tool), pin]));
  return { bundle, etag, policies: { set, version: bundle.policyVersion, ...(canary === undefined ? {} : { canary }) }, agents, keys: await JwkSet.of(bundle.keys), apiKeyHashes, toolPins, appliedAtMs: Date.now(), anchor };
}

function toolPinKey(server: string, tool: string): string {
  return `${server}\u0000${tool}`;
}

/** The public key `anchor` lists under `kid`, if it lists a valid one. */
function listedKey(anchor: SignedBundle, kid: string | undefined): KeyObject | undefined {
  const jwk = kid === undefined ? undefined : anchor.keys.find((key) => key.kid === kid);
  if (jwk === undefined) return undefined;
  try {
    return publicKeyOf(jwk);
  } catch {
    return undefined;
  }
}

/** The `kid` a bundle's signature names, whatever the shape of the rest. */
function signatureKid(candidate: unknown): string | undefined {
  const signature = (candidate as { signature?: { kid?: unknown } } | null)?.signature;
  return typeof signature?.kid === 'string' ? signature.kid : undefined;
}

/**
 * The high-water mark in `file`, or null when there is none yet. A mark that cannot be read
 * stops the start: starting without it would take any older bundle.
 */
function readHighWater(file: string): HighWater | null {
  const text = readFileIfExists(file);
  if (text === undefined) return null;
  let mark: Partial<HighWater> | null = null;
  try {
    mark = JSON.parse(text) as Partial<HighWater> | null;
  } catch {
    // Reported below.
  }
  if (typeof mark?.orgId !== 'string' || typeof mark.version !== 'string' || Number.isNaN(Date.parse(mark.version))) {
    throw new Error(`${file} is damaged (expected {"orgId": …, "version": …}): restore it, or clear CACHE_DIR to start afresh from the gateway`);
  }
  return { orgId: mark.orgId, version: mark.version };
}

function parseKey(text: string, origin: string): KeyObject {
  try {
    return publicKeyOfText(text);
  } catch (error) {
    throw new Error(`${origin}: ${(error as Error).message}`, { cause: error });
  }
}
