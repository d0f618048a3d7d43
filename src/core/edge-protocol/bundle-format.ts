import { createHash, createPublicKey, KeyObject, sign, verify } from 'node:crypto';
import type { JWK } from 'jose';
import { canonicalJson } from '../common/canonical-json';
import type { PolicyDefinition } from '../policy-engine/types';
import type { CanaryRollout } from '../decision/canary-cohort';

/** Format tag of the bundle documents this code writes and reads. */
export const BUNDLE_FORMAT = 'agentgov.bundle/1';

/** An agent as the edge knows it. */
export interface BundleAgent {
  id: string;
  name: string;
  trustTier: string;
  tags: string[];
  revoked: boolean;
}

/** An adapter API key as the edge checks it: `X-Api-Key` hashed must equal `hash`. */
export interface BundleApiKey {
  id: string;
  hash: string;
}

/**
 * A pinned MCP tool of the organization (docs/mcp.md "Tool pinning"): the definition it accepted
 * and its hash. The sidecar holds a tool whose server offers any other definition.
 */
export interface BundleToolPin {
  server: string;
  tool: string;
  /** SHA-256 hex of the definition's canonical JSON (src/core/mcp/tool-definition.ts). */
  hash: string;
  definition: { name: string; description: string; inputSchema: unknown };
}

/** A credential given to the edge, as the bundle names it. */
export interface BundleEdgeCredential {
  id: string;
  version: number;
}

/** Trust tier definitions: the order of the rungs and every alias's rung. */
export interface BundleTiers {
  order: string[];
  aliases: Record<string, string>;
}

/**
 * What a signed bundle carries (docs/architecture.md "Edge sidecar"): the organization's
 * policies in evaluation order, the trust tiers, its agents and revocation list, the public keys
 * agent tokens are verified with, and the issuer they must name. `version` is an ISO 8601 time:
 * the newest change the content reflects, so it only grows and equal content has an equal version.
 */
export interface BundleContent {
  format: typeof BUNDLE_FORMAT;
  orgId: string;
  version: string;
  policyVersion: number;
  policies: PolicyDefinition[];
  /**
   * The canary rollout running in the organization (docs/policies.md "Canary rollouts"): for a
   * share, the sidecar draws the same cohorts as the gateway; for labelled sidecars, the new
   * version is only in the bundles of the sidecars it selects (their X-Sidecar-Labels), the others
   * get the rollout without it and record their decisions as the stable cohort.
   */
  canary?: CanaryRollout;
  tiers: BundleTiers;
  agents: BundleAgent[];
  /** Ids of the revoked agents (also flagged in `agents`). */
  revoked: string[];
  keys: JWK[];
  /** The organization's live adapter API keys, as SHA-256 hex of the key (never the key). */
  apiKeys?: BundleApiKey[];
  /** The organization's pinned MCP tools, by server and name. */
  toolPins?: BundleToolPin[];
  /**
   * The organization's credentials marked for the edge, by id and version, never their values:
   * a sidecar whose grant (edge-grant.ts) holds others asks for a new one.
   */
  edgeCredentials?: BundleEdgeCredential[];
  tokenIssuer: string;
  /** The gateway's own MODE, for information: the sidecar's MODE is its own. */
  gatewayMode: 'enforce' | 'audit';
}

export interface BundleSignature {
  alg: 'EdDSA' | 'ES256';
  kid: string;
  /** base64url signature over `canonicalJson(content)`. */
  value: string;
}

export interface SignedBundle extends BundleContent {
  signature: BundleSignature;
}

/** A private key and what names it, as the gateway's key ring gives it. */
export interface BundleSigningKey {
  privateKey: KeyObject;
  kid: string;
  alg: 'EdDSA' | 'ES256';
}

/** The content of a bundle, its signature left out. */
export function bundleContent(bundle: SignedBundle): BundleContent {
  const { signature: _signature, ...content } = bundle;
  return content;
}

/** A strong ETag of the content: equal content, equal tag. */
export function contentTag(content: BundleContent): string {
  return `"${createHash('sha256').update(canonicalJson(content)).digest('base64url')}"`;
}

/** Signs the content with the gateway's key. */
export function signBundle(content: BundleContent, key: BundleSigningKey): SignedBundle {
  const data = Buffer.from(canonicalJson(content));
  const value = key.alg === 'EdDSA' ? sign(null, data, key.privateKey) : sign('sha256', data, { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  return { ...content, signature: { alg: key.alg, kid: key.kid, value: value.toString('base64url') } };
}

/** Why a bundle was refused, or null when its signature verifies against `publicKey`. */
export function bundleSignatureProblem(bundle: unknown, publicKey: KeyObject): string | null {
  const shape = bundleShapeProblem(bundle);
  if (shape !== null) return shape;
  const signed = bundle as SignedBundle;
  const data = Buffer.from(canonicalJson(bundleContent(signed)));
  const value = Buffer.from(signed.signature.value, 'base64url');
  let valid: boolean;
  try {
    valid =
      signed.signature.alg === 'EdDSA'
        ? verify(null, data, publicKey, value)
        : verify('sha256', data, { key: publicKey, dsaEncoding: 'ieee-p1363' }, value);
  } catch {
    valid = false;
  }
  return valid ? null : 'signature does not verify against the pinned gateway key';
}

/** A public key from a JWK or a PEM text. */
export function publicKeyOf(key: JWK | string): KeyObject {
  if (typeof key === 'string') return createPublicKey(key);
  const { d: _private, ...publicJwk } = key;
  return createPublicKey({ key: publicJwk as import('node:crypto').JsonWebKey, format: 'jwk' });
}

/**
 * The public key a text holds: a JWK as JSON or a PEM key; what a sidecar pins (BUNDLE_PUBLIC_KEY,
 * CACHE_DIR/gateway-key.json). Throws on anything else, and on a private key: a sidecar only
 * ever needs the gateway's public half, and a private one in its environment would be a leak.
 */
export function publicKeyOfText(text: string): KeyObject {
  const trimmed = text.trim();
  // The parsers' own messages can quote the text, which may be a private key given by mistake.
  let jwk: JWK | undefined;
  try {
    jwk = trimmed.startsWith('{') ? (JSON.parse(trimmed) as JWK) : undefined;
  } catch {
    throw new Error('not a PEM key or a JWK as JSON');
  }
  if ((jwk !== undefined && jwk.d !== undefined) || /PRIVATE KEY-----/.test(trimmed)) throw new Error('a private key, not a public one');
  let key: KeyObject;
  try {
    key = publicKeyOf(jwk ?? trimmed);
  } catch {
    throw new Error('not a PEM key or a JWK as JSON');
  }
  const type = key.asymmetricKeyType;
  if (type !== 'ed25519' && !(type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1')) throw new Error(`key type ${type}, not Ed25519 or P-256`);
  return key;
}

/** The JWK among the bundle's keys that its signature names, if any. */
export function signerJwk(bundle: SignedBundle): JWK | undefined {
  return bundle.keys.find((key) => key.kid === bundle.signature.kid);
}

/** Versions are ISO 8601 times of one format, so they compare as strings; this compares as times. */
export function isNewerVersion(candidate: string, current: string | null): boolean {
  if (current === null) return true;
  return Date.parse(candidate) > Date.parse(current);
}

function bundleShapeProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return 'not a JSON object';
  const bundle = value as Partial<SignedBundle>;
  if (bundle.format !== BUNDLE_FORMAT) return `unknown format ${JSON.stringify(bundle.format)}`;
  const signature = bundle.signature as Partial<BundleSignature> | undefined;
  if (typeof signature !== 'object' || signature === null || typeof signature.value !== 'string' || typeof signature.kid !== 'string') return 'unsigned';
  if (signature.alg !== 'EdDSA' && signature.alg !== 'ES256') return `unsupported signature algorithm ${JSON.stringify(signature.alg)}`;
  if (typeof bundle.version !== 'string' || Number.isNaN(Date.parse(bundle.version))) return 'version is not a timestamp';
  if (typeof bundle.orgId !== 'string' || typeof bundle.tokenIssuer !== 'string') return 'orgId or tokenIssuer missing';
  if (!Array.isArray(bundle.policies) || !Array.isArray(bundle.agents) || !Array.isArray(bundle.keys) || !Array.isArray(bundle.revoked)) return 'policies, agents, keys or revoked missing';
  if (bundle.apiKeys !== undefined && !Array.isArray(bundle.apiKeys)) return 'apiKeys is not a list';
  if (bundle.canary !== undefined && !isCanaryShape(bundle.canary)) return 'canary is not a rollout (id, policy, and share 1-99 with definition, or sidecarLabels with an optional definition)';
  return null;
}

/** A rollout to a share of the agents (with its definition), or to labelled sidecars (the definition only in the bundles of those it selects). */
function isCanaryShape(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { id, policy, share, sidecarLabels, definition } = value as Record<string, unknown>;
  if (typeof id !== 'string' || typeof policy !== 'string') return false;
  const named = typeof definition === 'object' && definition !== null && (definition as { name?: unknown }).name === policy;
  if (sidecarLabels === undefined) return Number.isInteger(share) && (share as number) >= 1 && (share as number) <= 99 && named;
  const labels = typeof sidecarLabels === 'object' && sidecarLabels !== null && !Array.isArray(sidecarLabels) && Object.values(sidecarLabels).every((label) => typeof label === 'string');
  return share === undefined && labels && (definition === undefined || named);
}
