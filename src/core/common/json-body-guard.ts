import type { NextFunction, Request, Response } from 'express';
import { ErrorCode } from './error-code';

/** Deepest nesting a JSON body of the API may have; far beyond any real request. */
export const MAX_JSON_DEPTH = 32;

/**
 * Express middleware after the body parsers of the Nest routes (the admin API and the rest of
 * the gateway's own): refuses, with a 400 naming the field, what findProblem refuses and also a
 * lone UTF-16 surrogate in any string or field name (`"\ud800"` is valid JSON). UTF-8 cannot
 * carry one: PostgreSQL stored U+FFFD in its place, so what was read back was not what was
 * sent, and validators that percent-encode their input (IsEmail) threw on it (a 500). The lean
 * routes (PDP, proxy, MCP) decide on such bodies, and the audit trail cleans what it records
 * (src/core/audit-record/audit-sanitizer.ts).
 */
export function jsonBodyGuard(request: Request, response: Response, next: NextFunction): void {
  const problem = typeof request.body === 'object' && request.body !== null ? findProblem(request.body, { wellFormed: true }) : null;
  if (problem === null) return next();
  response.status(400).json({ error: ErrorCode.InvalidRequest, message: problem });
}

export interface BodyRules {
  /** Refuse lone surrogates too (the Nest routes' bodies, jsonBodyGuard). */
  wellFormed?: boolean;
}

/**
 * The first reason a parsed JSON body cannot be taken (too deep, a NUL character, an infinite
 * number; with `wellFormed`, a lone surrogate), or null.
 */
export function findProblem(body: object, rules: BodyRules = {}): string | null {
  // Bodies are almost always fine: check them without building field paths (which cost more
  // than the JSON.parse on the PDP's lean path), and name the field only when one is not.
  const wellFormed = rules.wellFormed === true;
  return isAcceptable(body, 1, wellFormed) ? null : describeProblem(body, wellFormed);
}

function isAcceptableText(text: string, wellFormed: boolean): boolean {
  return !text.includes('\u0000') && (!wellFormed || text.isWellFormed());
}

function isAcceptable(value: unknown, depth: number, wellFormed: boolean): boolean {
  if (typeof value === 'string') return isAcceptableText(value, wellFormed);
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || value === null) return true;
  if (depth > MAX_JSON_DEPTH) return false;
  for (const key in value) {
    if (!isAcceptableText(key, wellFormed) || !isAcceptable((value as Record<string, unknown>)[key], depth + 1, wellFormed)) return false;
  }
  return true;
}

function describeProblem(body: object, wellFormed: boolean): string | null {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: body, path: '', depth: 1 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return `${path || 'body'} must not contain NUL characters`;
      if (wellFormed && !value.isWellFormed()) return `${path || 'body'} must not contain lone surrogates (UTF-16 halves that UTF-8 cannot carry)`;
      continue;
    }
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return `${path || 'body'} is not a finite number`;
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_JSON_DEPTH) return `the request body is nested deeper than ${MAX_JSON_DEPTH} levels (at ${path})`;
    for (const [key, child] of Object.entries(value)) {
      const childPath = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
      if (key.includes('\u0000')) return `field names must not contain NUL characters (at ${path || 'body'})`;
      if (wellFormed && !key.isWellFormed()) return `field names must not contain lone surrogates (at ${path || 'body'})`;
      stack.push({ value: child, path: childPath, depth: depth + 1 });
    }
  }
  return null;
}
