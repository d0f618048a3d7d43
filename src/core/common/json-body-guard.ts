import type { NextFunction, Request, Response } from 'express';
import { ErrorCode } from './error-code';

/** Deepest nesting a JSON body of the API may have; far beyond any real request. */
export const MAX_JSON_DEPTH = 32;

/**
 * Express middleware after the JSON parser: refuses, with a 400 naming the field, bodies nested
 * deeper than MAX_JSON_DEPTH (validation would recurse on them until the stack overflows),
 * strings holding a NUL character (PostgreSQL cannot store one) and numbers beyond a double's
 * range (`1e400` parses as Infinity, which a policy compares as no JSON number and JSON stores as null).
 */
export function jsonBodyGuard(request: Request, response: Response, next: NextFunction): void {
  const problem = typeof request.body === 'object' && request.body !== null ? findProblem(request.body) : null;
  if (problem === null) return next();
  response.status(400).json({ error: ErrorCode.InvalidRequest, message: problem });
}

/** The first reason a parsed JSON body cannot be taken (too deep, a NUL character, an infinite number), or null. */
export function findProblem(body: object): string | null {
  // Bodies are almost always fine: check them without building field paths (which cost more
  // than the JSON.parse on the PDP's lean path), and name the field only when one is not.
  return isAcceptable(body, 1) ? null : describeProblem(body);
}

function isAcceptable(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return !value.includes('\u0000');
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || value === null) return true;
  if (depth > MAX_JSON_DEPTH) return false;
  for (const key in value) {
    if (key.includes('\u0000') || !isAcceptable((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

function describeProblem(body: object): string | null {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: body, path: '', depth: 1 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return `${path || 'body'} must not contain NUL characters`;
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
      stack.push({ value: child, path: childPath, depth: depth + 1 });
    }
  }
  return null;
}
