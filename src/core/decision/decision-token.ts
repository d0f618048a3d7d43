import { createHash, hash, KeyObject, sign } from 'node:crypto';
import { canonicalJson } from '../common/canonical-json';
import { atTurnEnd } from '../common/turn-end';

/*
 * Decision tokens (docs/security.md "Decision tokens"): after an allow the gateway and the sidecar
 * add `X-Service-Decision-Token` to the forwarded request, so an upstream can refuse calls that
 * went around them. A token is `<JWS>~<claims>~<proof>`:
 *
 * - `<JWS>`: a compact JWT (`typ: decision-batch+jwt`) of the signer's key whose payload is
 *   `{iss, iat, exp, dtr}`, `dtr` the root of a Merkle tree over the tokens signed together;
 * - `<claims>`: base64url of this decision's claims (DecisionTokenClaims) as JSON;
 * - `<proof>`: base64url of 33-byte steps from its leaf to the root (a side byte, 0 when the
 *   sibling is on the left, then the sibling's SHA-256).
 *
 * Why a tree: one Ed25519 signature costs about a third of a proxied request's own work, and the
 * proxy signs every request; signed once per turn of the event loop, a turn's decisions share it.
 * A leaf is SHA-256(0x00 ‖ claims bytes), a node SHA-256(0x01 ‖ left ‖ right), a last node without
 * a sibling goes up unchanged. Sibling hashes say nothing of other decisions: their claims hold
 * the decision id's 64 random bits.
 */

/** The host's DecisionTokenSigner (gateway or sidecar); absent or null when DECISION_TOKENS=false. */
export const DECISION_TOKENS = Symbol('DecisionTokens');

/** How long a decision token is good for. */
export const DECISION_TOKEN_TTL_SECONDS = 60;
/** Most tokens under one signature; a turn with more signs more often. Bounds a proof at 8 steps. */
export const MAX_TOKENS_PER_SIGNATURE = 256;
/** The JWS `typ` of a batch; the sidecar's key certificate is `sidecar-key+jwt`. */
export const DECISION_BATCH_TYPE = 'decision-batch+jwt';
export const SIDECAR_KEY_TYPE = 'sidecar-key+jwt';

/** What one token says of its decision. */
export interface DecisionTokenClaims {
  /** The decision id (its audit entry's id). */
  jti: string;
  /** The agent. */
  sub: string;
  org: string;
  /** The action decided. */
  act: string;
  /** requestHash() of what was forwarded. */
  req: string;
  /** The approval the request presented, when one lifted a hold. */
  apr?: string;
  /** The query parameter of an injected credential, left out of `req` (its value is a secret). */
  cq?: string;
  iat: number;
  exp: number;
}

/** A key that signs tokens: the gateway's signing key, or a sidecar's own with the certificate the bundle gave it. */
export interface TokenSigningKey {
  privateKey: KeyObject;
  kid: string;
  alg: 'EdDSA' | 'ES256';
  /** The gateway's certificate of this key (a sidecar's), carried in the JWS header as `sck`. */
  certificate?: string;
}

/**
 * The hash a token binds: SHA-256 over the method, a line feed, the request target as the upstream
 * receives it (path and query; an injected query credential left out), a line feed and the body's
 * bytes; base64url.
 */
export function requestHash(method: string, target: string, body: Buffer | undefined): string {
  const head = `${method.toUpperCase()}\n${target}\n`;
  // One-shot hash() where there is no body (most proxied requests): it costs less than half of a
  // Hash object's create, update and digest (bench/HISTORY.md, decision tokens). A body is hashed
  // streaming, never copied.
  if (body === undefined || body.length === 0) return hash('sha256', head, 'base64url');
  return createHash('sha256').update(head).update(body).digest('base64url');
}

/** Where an MCP `tools/call` carries its token: `params._meta[TOOL_CALL_TOKEN_KEY]` (docs/security.md "Decision tokens"). */
export const TOOL_CALL_TOKEN_KEY = 'io.agentgov/decision-token';
/** The method a tool call's `req` names, in place of an HTTP method: no HTTP request hashes as it. */
export const TOOL_CALL_METHOD = 'TOOLS/CALL';

/**
 * The `req` of an MCP tool call's token: requestHash('TOOLS/CALL', <tool name>, <UTF-8 bytes of
 * the RFC 8785 canonical JSON of params.arguments, {} when absent or null>). The SDKs' verifiers
 * (verifyToolCall) compute the same from the params they receive, whatever order or spacing the
 * JSON came in.
 */
export function toolCallHash(name: string, args: unknown): string {
  return requestHash(TOOL_CALL_METHOD, name, Buffer.from(canonicalJson(args ?? {})));
}

/** Called with the token once it is signed, at the end of the turn. */
export type TokenReady = (token: string) => void;

/**
 * Signs the decision tokens asked for in a turn together, at its end: cost per token is one leaf
 * hash and log2(n) node hashes, plus one signature per MAX_TOKENS_PER_SIGNATURE tokens. Holds
 * only the turn's requests (cleared at every flush).
 */
export class DecisionTokenSigner {
  /** Each token's leaf input: 0x00 then its claims' JSON (the claims are its bytes after the first). */
  private pending: Array<{ leafInput: Buffer; ready: TokenReady }> = [];
  /** The encoded JWS header of the last key signed with: the same for every batch until the key or its certificate changes. */
  private header: { key: TokenSigningKey; encoded: string } | null = null;

  constructor(
    private readonly key: () => TokenSigningKey,
    private readonly issuer: () => string,
  ) {}

  /** Claims for a decision made now, with the token's lifetime. */
  static claims(fields: Omit<DecisionTokenClaims, 'iat' | 'exp'>, nowMs = Date.now()): DecisionTokenClaims {
    const iat = Math.floor(nowMs / 1000);
    // Field by field rather than spread: on the proxy's every request, a spread copy cost more than the claims' JSON.
    const claims: DecisionTokenClaims = { jti: fields.jti, sub: fields.sub, org: fields.org, act: fields.act, req: fields.req, iat, exp: iat + DECISION_TOKEN_TTL_SECONDS };
    if (fields.apr !== undefined) claims.apr = fields.apr;
    if (fields.cq !== undefined) claims.cq = fields.cq;
    return claims;
  }

  issue(claims: DecisionTokenClaims, ready: TokenReady): void {
    // U+0000 is the single byte 0x00 in UTF-8: the leaf's prefix, without a second buffer.
    this.pending.push({ leafInput: Buffer.from(`\u0000${JSON.stringify(claims)}`), ready });
    if (this.pending.length === 1) atTurnEnd(() => this.flush());
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    for (let start = 0; start < batch.length; start += MAX_TOKENS_PER_SIGNATURE) {
      this.signBatch(batch.slice(start, start + MAX_TOKENS_PER_SIGNATURE));
    }
  }

  private signBatch(batch: Array<{ leafInput: Buffer; ready: TokenReady }>): void {
    const levels = merkleLevels(batch.map(({ leafInput }) => hash('sha256', leafInput, 'buffer')));
    const root = levels[levels.length - 1][0];
    const key = this.key();
    const nowSeconds = Math.floor(Date.now() / 1000);
    const payload = { iss: this.issuer(), iat: nowSeconds, exp: nowSeconds + DECISION_TOKEN_TTL_SECONDS, dtr: root.toString('base64url') };
    const signingInput = `${this.encodedHeader(key)}.${base64url(JSON.stringify(payload))}`;
    const signature = key.alg === 'EdDSA' ? sign(null, Buffer.from(signingInput), key.privateKey) : sign('sha256', Buffer.from(signingInput), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
    const jws = `${signingInput}.${signature.toString('base64url')}`;
    for (let index = 0; index < batch.length; index++) {
      const token = `${jws}~${batch[index].leafInput.toString('base64url', 1)}~${proofOf(levels, index).toString('base64url')}`;
      batch[index].ready(token);
    }
  }

  private encodedHeader(key: TokenSigningKey): string {
    const cached = this.header;
    if (cached !== null && cached.key.kid === key.kid && cached.key.alg === key.alg && cached.key.certificate === key.certificate) return cached.encoded;
    const header: Record<string, string> = { alg: key.alg, kid: key.kid, typ: DECISION_BATCH_TYPE };
    if (key.certificate !== undefined) header.sck = key.certificate;
    const encoded = base64url(JSON.stringify(header));
    this.header = { key, encoded };
    return encoded;
  }
}

function base64url(text: string): string {
  return Buffer.from(text).toString('base64url');
}

/** A node's hash input, 0x01 ‖ left ‖ right, filled for each node in turn (the signer runs on one thread, a node at a time). */
const NODE_INPUT = Buffer.alloc(65, 1);

/** Every level of the tree, leaves first, the root alone last. */
function merkleLevels(leaves: Buffer[]): Buffer[][] {
  const levels = [leaves];
  let level = leaves;
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let index = 0; index < level.length; index += 2) {
      if (index + 1 === level.length) {
        next.push(level[index]);
        continue;
      }
      level[index].copy(NODE_INPUT, 1);
      level[index + 1].copy(NODE_INPUT, 33);
      next.push(hash('sha256', NODE_INPUT, 'buffer'));
    }
    levels.push(next);
    level = next;
  }
  return levels;
}

/** The steps from leaf `index` to the root: side byte (0: sibling on the left) and sibling hash. */
function proofOf(levels: Buffer[][], index: number): Buffer {
  const proof = Buffer.allocUnsafe(33 * (levels.length - 1));
  let length = 0;
  let position = index;
  for (let depth = 0; depth < levels.length - 1; depth++) {
    const level = levels[depth];
    const sibling = position ^ 1;
    if (sibling < level.length) {
      proof[length] = sibling < position ? 0 : 1;
      level[sibling].copy(proof, length + 1);
      length += 33;
    }
    position >>= 1;
  }
  return proof.subarray(0, length);
}
