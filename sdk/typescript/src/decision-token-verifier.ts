import { createHash, createPublicKey, KeyObject, verify as verifySignature } from 'node:crypto';
import { canonicalJson } from './canonical-json';

/*
 * Verifies the gateway's decision tokens (X-Service-Decision-Token), offline, from the gateway's
 * JWKS (docs/security.md "Decision tokens" in the gateway's repository describes the format):
 * `<JWS>~<claims>~<proof>`, the JWS a JWT of a gateway key (or of a sidecar key the gateway
 * certified, its `sck` header) over the root of a Merkle tree, the claims this decision's, the
 * proof the path from their leaf to that root.
 */

/** Why a token was refused. */
export type DecisionTokenProblem = 'missing' | 'malformed' | 'unknown_key' | 'bad_signature' | 'wrong_issuer' | 'expired' | 'wrong_request';

export class DecisionTokenError extends Error {
  constructor(
    readonly problem: DecisionTokenProblem,
    message: string,
  ) {
    super(message);
    this.name = 'DecisionTokenError';
  }
}

export interface JsonWebKeySet {
  keys: Array<Record<string, unknown>>;
}

export interface DecisionTokenVerifierOptions {
  /** The gateway's `/.well-known/jwks.json`; fetched at the first verification, again at most every `refreshSeconds` for an unknown key. */
  jwksUrl?: string;
  /** The keys themselves, for a verifier that never fetches. One of jwksUrl and jwks. */
  jwks?: JsonWebKeySet;
  /** The gateway's PUBLIC_URL, which tokens name as `iss`; unchecked when unset. */
  issuer?: string;
  /** Clock skew allowed on expiry, seconds (default 5). */
  clockToleranceSeconds?: number;
  /** Least time between two JWKS fetches, seconds (default 30). */
  refreshSeconds?: number;
  /** The time, ms since the epoch (default Date.now): for the expiries and the refresh interval both. */
  clock?: () => number;
}

/** What a valid token says of the decision. */
export interface VerifiedDecision {
  decisionId: string;
  agentId: string;
  orgId: string;
  action: string;
  approvalId?: string;
  expiresAt: Date;
  /** The sidecar that decided, when an edge sidecar did. */
  sidecarId?: string;
}

/** The request as the upstream received it. */
export interface ReceivedRequest {
  method: string;
  /** The request target: path and query as received (`/orders/42?full=1`). */
  target: string;
  body?: Uint8Array;
}

/** Where an MCP `tools/call` carries its decision token: `params._meta[TOOL_CALL_TOKEN_KEY]`. */
export const TOOL_CALL_TOKEN_KEY = 'io.agentgov/decision-token';

/** The params of an MCP `tools/call` request as the server received them (parsed JSON). */
export interface ToolCallParams {
  name: string;
  arguments?: Record<string, unknown> | null;
  _meta?: Record<string, unknown> | null;
  [key: string]: unknown;
}

interface DecisionClaims {
  jti: string;
  sub: string;
  org: string;
  act: string;
  req: string;
  apr?: string;
  cq?: string;
  exp: number;
}

const BATCH_TYPE = 'decision-batch+jwt';
const SIDECAR_KEY_TYPE = 'sidecar-key+jwt';
const STEP_BYTES = 33;
const MAX_PROOF_STEPS = 16;

export class DecisionTokenVerifier {
  private keys = new Map<string, KeyObject>();
  private fetchedAt: number | undefined;
  private fetching: Promise<void> | null = null;
  private readonly toleranceSeconds: number;

  constructor(private readonly options: DecisionTokenVerifierOptions) {
    if ((options.jwksUrl === undefined) === (options.jwks === undefined)) throw new Error('DecisionTokenVerifier: give one of jwksUrl and jwks');
    if (options.jwks !== undefined) this.keys = keysOf(options.jwks);
    this.toleranceSeconds = options.clockToleranceSeconds ?? 5;
  }

  /** The decision a token proves for this request; throws DecisionTokenError when it proves none. */
  async verify(token: string | undefined, request: ReceivedRequest, nowMs = (this.options.clock ?? Date.now)()): Promise<VerifiedDecision> {
    if (token === undefined || token === '') throw new DecisionTokenError('missing', 'No X-Service-Decision-Token: the call did not come through the gateway');
    return this.verifyFor(token, (credentialParameter) => requestHash(request, credentialParameter), nowMs);
  }

  /**
   * The decision an MCP `tools/call`'s params carry in `_meta["io.agentgov/decision-token"]`, for
   * exactly this tool and these arguments (toolCallHash); throws DecisionTokenError when they
   * carry none. Call it in the server's tools/call handler with the request's params.
   */
  async verifyToolCall(params: ToolCallParams, nowMs = (this.options.clock ?? Date.now)()): Promise<VerifiedDecision> {
    const token = params?._meta?.[TOOL_CALL_TOKEN_KEY];
    if (typeof token !== 'string' || token === '') throw new DecisionTokenError('missing', `No decision token in the tool call's _meta["${TOOL_CALL_TOKEN_KEY}"]: the call did not come through the gateway`);
    if (typeof params.name !== 'string') throw malformed('the tool call has no name');
    const args = params.arguments;
    if (args !== undefined && args !== null && (typeof args !== 'object' || Array.isArray(args))) throw malformed('the tool call’s arguments are not an object');
    const expected = toolCallHash(params.name, args);
    return this.verifyFor(token, () => expected, nowMs);
  }

  private async verifyFor(token: string, expectedHash: (credentialParameter: string | undefined) => string, nowMs: number): Promise<VerifiedDecision> {
    const parts = token.split('~');
    if (parts.length !== 3) throw malformed('not <JWS>~<claims>~<proof>');
    const [jws, claimsPart, proofPart] = parts;
    const segments = jws.split('.');
    if (segments.length !== 3) throw malformed('the JWS is not compact');
    const header = jsonPart(segments[0], 'header');
    if (header.typ !== BATCH_TYPE) throw malformed(`typ is not ${BATCH_TYPE}`);
    const now = nowMs / 1000;
    const certified = typeof header.sck === 'string' ? await this.sidecarKey(header.sck, now) : undefined;
    const key = certified?.key ?? (await this.key(header.kid));
    checkSignature(segments, header, key);
    const batch = jsonPart(segments[1], 'payload');
    this.checkIssuer(batch.iss);
    if (typeof batch.exp !== 'number' || batch.exp + this.toleranceSeconds < now) throw new DecisionTokenError('expired', 'The decision token has expired');
    const claimsBytes = decodePart(claimsPart, 'claims');
    if (typeof batch.dtr !== 'string' || !rootOf(claimsBytes, decodePart(proofPart, 'proof')).equals(decodePart(batch.dtr, 'root'))) throw new DecisionTokenError('bad_signature', 'The decision claims are not those the gateway signed');
    const claims = claimsOf(claimsBytes);
    if (claims.exp + this.toleranceSeconds < now) throw new DecisionTokenError('expired', 'The decision token has expired');
    if (certified !== undefined && certified.org !== claims.org) throw new DecisionTokenError('bad_signature', 'The sidecar is not of the decision’s organization');
    if (expectedHash(claims.cq) !== claims.req) throw new DecisionTokenError('wrong_request', `The decision token is for another request (decision ${claims.jti})`);
    return {
      decisionId: claims.jti,
      agentId: claims.sub,
      orgId: claims.org,
      action: claims.act,
      ...(claims.apr !== undefined ? { approvalId: claims.apr } : {}),
      expiresAt: new Date(claims.exp * 1000),
      ...(certified !== undefined ? { sidecarId: certified.sidecarId } : {}),
    };
  }

  private checkIssuer(iss: unknown): void {
    if (this.options.issuer !== undefined && iss !== this.options.issuer) throw new DecisionTokenError('wrong_issuer', `The decision token is of another issuer (${String(iss)})`);
  }

  /** A sidecar's key, from the certificate the gateway gave it: a JWT of a gateway key. */
  private async sidecarKey(certificate: string, now: number): Promise<{ key: KeyObject; org: string; sidecarId: string }> {
    const segments = certificate.split('.');
    if (segments.length !== 3) throw malformed('the sidecar key certificate is not a compact JWS');
    const header = jsonPart(segments[0], 'certificate header');
    if (header.typ !== SIDECAR_KEY_TYPE) throw malformed(`the certificate's typ is not ${SIDECAR_KEY_TYPE}`);
    checkSignature(segments, header, await this.key(header.kid));
    const payload = jsonPart(segments[1], 'certificate');
    this.checkIssuer(payload.iss);
    if (typeof payload.exp !== 'number' || payload.exp + this.toleranceSeconds < now) throw new DecisionTokenError('expired', 'The sidecar key certificate has expired');
    const jwk = (payload.cnf as { jwk?: unknown } | undefined)?.jwk;
    if (typeof payload.org !== 'string' || typeof payload.sub !== 'string' || typeof jwk !== 'object' || jwk === null) throw malformed('the certificate names no organization, sidecar or key');
    return { key: importKey(jwk as Record<string, unknown>), org: payload.org, sidecarId: payload.sub };
  }

  private async key(kid: unknown): Promise<KeyObject> {
    if (typeof kid !== 'string') throw malformed('no kid');
    let key = this.keys.get(kid);
    if (key === undefined && this.options.jwksUrl !== undefined) {
      await this.refresh();
      key = this.keys.get(kid);
    }
    if (key === undefined) throw new DecisionTokenError('unknown_key', `No key ${kid} in the gateway's JWKS`);
    return key;
  }

  /** One fetch at a time, at most every refreshSeconds: made-up kids cannot make it fetch more. */
  private refresh(): Promise<void> {
    if (this.fetching !== null) return this.fetching;
    const clock = this.options.clock ?? Date.now;
    if (this.fetchedAt !== undefined && clock() - this.fetchedAt < (this.options.refreshSeconds ?? 30) * 1000) return Promise.resolve();
    this.fetching = (async () => {
      try {
        const answer = await fetch(this.options.jwksUrl!, { signal: AbortSignal.timeout(5000) });
        if (!answer.ok) throw new Error(`${answer.status}`);
        this.keys = keysOf((await answer.json()) as JsonWebKeySet);
      } catch {
        // Kept: the keys fetched before; an unknown kid is then refused.
      } finally {
        this.fetchedAt = clock();
        this.fetching = null;
      }
    })();
    return this.fetching;
  }
}

/** The hash a token's `req` claim must equal (the gateway's requestHash), the credential's query parameter left out. */
export function requestHash(request: ReceivedRequest, credentialParameter: string | undefined): string {
  let target = request.target;
  if (credentialParameter !== undefined) {
    const at = target.indexOf('?');
    if (at !== -1) {
      const query = target
        .slice(at + 1)
        .split('&')
        .filter((item) => parameterName(item) !== credentialParameter)
        .join('&');
      target = query === '' ? target.slice(0, at) : `${target.slice(0, at)}?${query}`;
    }
  }
  const hash = createHash('sha256').update(`${request.method.toUpperCase()}\n${target}\n`);
  if (request.body !== undefined) hash.update(request.body);
  return hash.digest('base64url');
}

/**
 * The hash a tool call's token binds (its `req` claim): requestHash('TOOLS/CALL', <tool name>,
 * <UTF-8 bytes of the RFC 8785 canonical JSON of the arguments, {} when absent or null>), that is
 * base64url(SHA-256("TOOLS/CALL\n" + name + "\n" + canonical JSON)).
 */
export function toolCallHash(name: string, args: Record<string, unknown> | null | undefined): string {
  return createHash('sha256').update(`TOOLS/CALL\n${name}\n`).update(canonicalJson(args ?? {})).digest('base64url');
}

function parameterName(item: string): string {
  const equals = item.indexOf('=');
  const raw = (equals === -1 ? item : item.slice(0, equals)).replace(/\+/g, ' ');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function checkSignature(segments: string[], header: Record<string, unknown>, key: KeyObject): void {
  const input = Buffer.from(`${segments[0]}.${segments[1]}`);
  const signature = decodePart(segments[2], 'signature');
  let valid: boolean;
  if (header.alg === 'EdDSA' && key.asymmetricKeyType === 'ed25519') valid = verifySignature(null, input, key, signature);
  else if (header.alg === 'ES256' && key.asymmetricKeyType === 'ec') valid = verifySignature('sha256', input, { key, dsaEncoding: 'ieee-p1363' }, signature);
  else throw new DecisionTokenError('bad_signature', `Algorithm ${String(header.alg)} does not fit key ${String(header.kid)}`);
  if (!valid) throw new DecisionTokenError('bad_signature', 'The decision token’s signature is not valid');
}

function rootOf(claims: Buffer, proof: Buffer): Buffer {
  if (proof.length % STEP_BYTES !== 0 || proof.length / STEP_BYTES > MAX_PROOF_STEPS) throw malformed('the proof is not whole steps');
  let node = createHash('sha256').update(Buffer.from([0])).update(claims).digest();
  for (let at = 0; at < proof.length; at += STEP_BYTES) {
    const sibling = proof.subarray(at + 1, at + STEP_BYTES);
    const hash = createHash('sha256').update(Buffer.from([1]));
    node = (proof[at] === 0 ? hash.update(sibling).update(node) : hash.update(node).update(sibling)).digest();
  }
  return node;
}

function claimsOf(bytes: Buffer): DecisionClaims {
  let claims: Record<string, unknown>;
  try {
    claims = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  } catch {
    throw malformed('the claims are not JSON');
  }
  for (const name of ['jti', 'sub', 'org', 'act', 'req']) if (typeof claims[name] !== 'string') throw malformed(`the claims have no ${name}`);
  if (typeof claims.exp !== 'number') throw malformed('the claims have no exp');
  if (claims.cq !== undefined && typeof claims.cq !== 'string') throw malformed('cq is not a string');
  return claims as unknown as DecisionClaims;
}

function keysOf(jwks: JsonWebKeySet): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const jwk of Array.isArray(jwks?.keys) ? jwks.keys : []) {
    if (typeof jwk.kid !== 'string') continue;
    try {
      keys.set(jwk.kid, importKey(jwk));
    } catch {
      // A key of a kind this verifier does not use.
    }
  }
  return keys;
}

function importKey(jwk: Record<string, unknown>): KeyObject {
  if (!((jwk.kty === 'OKP' && jwk.crv === 'Ed25519') || (jwk.kty === 'EC' && jwk.crv === 'P-256'))) throw malformed('a key is neither Ed25519 nor P-256');
  const { kty, crv, x, y } = jwk;
  return createPublicKey({ key: { kty, crv, x, ...(y !== undefined ? { y } : {}) } as import('node:crypto').JsonWebKey, format: 'jwk' });
}

function jsonPart(part: string, what: string): Record<string, unknown> {
  try {
    const value = JSON.parse(decodePart(part, what).toString('utf8')) as unknown;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Reported below.
  }
  throw malformed(`the ${what} is not a JSON object`);
}

function decodePart(part: string, what: string): Buffer {
  if (!/^[A-Za-z0-9_-]*$/.test(part)) throw malformed(`the ${what} is not base64url`);
  return Buffer.from(part, 'base64url');
}

function malformed(detail: string): DecisionTokenError {
  return new DecisionTokenError('malformed', `Malformed decision token: ${detail}`);
}
