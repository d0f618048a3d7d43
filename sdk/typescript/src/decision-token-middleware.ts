import type { IncomingMessage, ServerResponse } from 'node:http';
import { DecisionTokenError, DecisionTokenVerifier, DecisionTokenVerifierOptions, VerifiedDecision } from './decision-token-verifier';

/** A request as Express hands it on: its body may already be read (express.raw(), or express.json with a `verify` keeping `rawBody`). */
type ExpressLikeRequest = IncomingMessage & { originalUrl?: string; body?: unknown; rawBody?: unknown; decision?: VerifiedDecision };

export interface DecisionTokenMiddlewareOptions extends DecisionTokenVerifierOptions {
  /** Largest body read to check its hash, bytes (default 10 MiB); a larger one is refused 413. */
  maxBodyBytes?: number;
}

/**
 * Express (or plain node:http) middleware that lets a request through only with a valid
 * X-Service-Decision-Token for exactly this method, target and body, and puts what it proves on
 * `req.decision`. Refusals are 401 `{error: "decision_token_invalid", problem, message}`.
 *
 * The hash covers the body's bytes: mount it before any body parser (it then leaves the body in
 * `req.body` as a Buffer), after `express.raw({type: '*\/*'})`, or after a parser that keeps the
 * bytes as `req.rawBody`.
 */
export function decisionTokenMiddleware(options: DecisionTokenMiddlewareOptions): (request: ExpressLikeRequest, response: ServerResponse, next: (error?: unknown) => void) => void {
  const verifier = new DecisionTokenVerifier(options);
  const maxBodyBytes = options.maxBodyBytes ?? 10 * 1024 * 1024;
  return (request, response, next) => {
    void (async () => {
      const body = await bodyOf(request, maxBodyBytes);
      if (body === 'too_large') return refuse(response, 413, 'malformed', `Body larger than ${maxBodyBytes} bytes`);
      const header = request.headers['x-service-decision-token'];
      request.decision = await verifier.verify(Array.isArray(header) ? header[0] : header, { method: request.method ?? 'GET', target: request.originalUrl ?? request.url ?? '/', body });
      next();
    })().catch((error: unknown) => {
      if (error instanceof DecisionTokenError) return refuse(response, 401, error.problem, error.message);
      next(error);
    });
  };
}

async function bodyOf(request: ExpressLikeRequest, limit: number): Promise<Buffer | 'too_large'> {
  if (Buffer.isBuffer(request.rawBody)) return request.rawBody;
  if (Buffer.isBuffer(request.body)) return request.body;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > limit) return 'too_large';
    chunks.push(chunk as Buffer);
  }
  const body = Buffer.concat(chunks);
  request.body = body;
  return body;
}

function refuse(response: ServerResponse, status: number, problem: string, message: string): void {
  response.statusCode = status;
  response.setHeader('content-type', 'application/json');
  response.end(JSON.stringify({ error: 'decision_token_invalid', problem, message }));
}
