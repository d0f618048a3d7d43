/** A response as tests look at it. */
export interface TestResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  adminToken?: string;
  bearer?: string;
  headers?: Record<string, string>;
  /** Sent as JSON unless it is a string or Buffer. */
  body?: unknown;
  /** Fails the call when no answer came within this time (default: wait as fetch does). */
  timeoutMs?: number;
  /** false: a redirect is answered as it came (its status and Location), not followed. */
  followRedirects?: boolean;
}

/** One HTTP call with fetch; parses JSON bodies when the response says JSON. */
export async function call<T = Record<string, unknown>>(baseUrl: string, method: string, path: string, options: RequestOptions = {}): Promise<TestResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.adminToken !== undefined) headers['x-admin-token'] = options.adminToken;
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`;
  let body: string | Buffer | undefined;
  if (typeof options.body === 'string' || Buffer.isBuffer(options.body)) body = options.body;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const signal = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body, signal, redirect: options.followRedirects === false ? 'manual' : 'follow' });
  const text = await response.text();
  const isJson = response.headers.get('content-type')?.includes('json') ?? false;
  return { status: response.status, headers: response.headers, body: (isJson && text ? JSON.parse(text) : {}) as T, text };
}
