import type { PolicyError } from './types';

/** An answer of the gateway that is not a success, or no answer at all (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The policy errors of a 400 `invalid_policy`, with their lines and columns. */
    readonly policyErrors: PolicyError[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type Query = Record<string, string | number | boolean | undefined | null>;

interface RequestOptions {
  query?: Query;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as YAML (policies are YAML as admins write them). */
  yaml?: string;
  signal?: AbortSignal;
}

/**
 * The gateway's admin and analytics APIs, called with the admin token as `X-Admin-Token`
 * (docs/identity.md and the OpenAPI document at /docs-json). Every failure becomes an ApiError
 * whose message names the route and what the gateway said, so a page can show it.
 */
export class Api {
  constructor(
    private readonly token: string,
    private readonly onUnauthorized: () => void = () => undefined,
  ) {}

  get<T>(path: string, query?: Query, signal?: AbortSignal): Promise<T> {
    return this.request<T>('GET', path, { query, signal });
  }

  post<T>(path: string, options: RequestOptions = {}): Promise<T> {
    return this.request<T>('POST', path, options);
  }

  patch<T>(path: string, json: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { json });
  }

  delete<T>(path: string): Promise<T> {
    return this.request<T>('DELETE', path);
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const url = path + queryString(options.query);
    const headers: Record<string, string> = { 'X-Admin-Token': this.token, Accept: 'application/json' };
    let body: string | undefined;
    if (options.yaml !== undefined) {
      headers['Content-Type'] = 'application/yaml';
      body = options.yaml;
    } else if (options.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(options.json);
    }
    let response: Response;
    try {
      response = await fetch(url, { method, headers, body, signal: options.signal, credentials: 'omit', cache: 'no-store' });
    } catch (error) {
      if (options.signal?.aborted) throw error;
      throw new ApiError(0, 'unreachable', `${method} ${path}: the gateway did not answer (${error instanceof Error ? error.message : String(error)})`);
    }
    const parsed = parseJson(await response.text());
    if (response.ok) return parsed as T;
    if (response.status === 401) this.onUnauthorized();
    throw errorOf(method, path, response, parsed);
  }
}

function queryString(query: Query | undefined): string {
  if (query === undefined) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

function parseJson(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function errorOf(method: string, path: string, response: Response, body: unknown): ApiError {
  const fields = typeof body === 'object' && body !== null ? (body as { error?: unknown; message?: unknown; errors?: unknown }) : {};
  const code = typeof fields.error === 'string' ? fields.error : `http_${response.status}`;
  const said = typeof fields.message === 'string' ? fields.message : response.statusText || 'no message';
  const policyErrors = Array.isArray(fields.errors) ? (fields.errors as PolicyError[]) : [];
  return new ApiError(response.status, code, `${method} ${path} answered ${response.status} ${code}: ${said}`, policyErrors);
}
