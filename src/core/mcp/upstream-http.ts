import { Readable } from 'node:stream';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Agent, Dispatcher } from 'undici';

/** Statuses whose response has no body (a Response with one would throw). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * The HTTP the gateway's upstream MCP transports speak (docs/mcp.md, "The relay"): the SDK's
 * client transport, given this `fetch`, which sends each request with undici's `request` over
 * one keep-alive agent instead of Node's fetch.
 *
 * Node's fetch keeps every exchange alive until a full garbage collection: the SDK hands each
 * request its session's abort signal, to which fetch adds a listener per request, removed by a
 * FinalizationRegistry only once the request is found dead, and every response is registered in
 * another; objects reachable from either survive the young generation, so each call's request,
 * response and body were promoted (the soak's old generation grew by about 18 KiB a call between
 * full collections, docs/performance.md "Soak"). `request` removes its abort listener when the
 * exchange ends and registers nothing, and costs less a request besides. Aborting the session
 * still ends what is in flight: a request waiting for its answer fails with the abort, an event
 * stream being read is destroyed.
 *
 * A JSON answer is read whole before it is handed on (the transport reads it whole next); an
 * event stream is handed on as it comes. Redirects are returned as they are (the SDK's
 * transport decides whether to follow one).
 */
export class McpUpstreamHttp {
  private readonly agent = new Agent({ keepAliveTimeout: 30_000 });

  readonly fetch: FetchLike = async (url, init) => {
    const { statusCode, headers, body } = await this.agent.request({
      origin: new URL(url).origin,
      path: pathOf(url),
      method: (init?.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: headersOf(init?.headers),
      body: init?.body as string | undefined,
      signal: init?.signal ?? undefined,
    });
    const answer = { status: statusCode, headers: responseHeadersOf(headers) };
    if (NULL_BODY_STATUSES.has(statusCode) || init?.method === 'HEAD') {
      body.resume();
      return new Response(null, answer);
    }
    if (answer.headers.get('content-type')?.includes('text/event-stream') === true) return new Response(Readable.toWeb(body) as ReadableStream<Uint8Array>, answer);
    return new Response(await body.arrayBuffer(), answer);
  };

  async close(): Promise<void> {
    await this.agent.close();
  }
}

function pathOf(url: string | URL): string {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return parsed.pathname + parsed.search;
}

function headersOf(headers: RequestInit['headers']): Record<string, string> {
  const record: Record<string, string> = {};
  if (headers === undefined) return record;
  new Headers(headers).forEach((value, name) => (record[name] = value));
  return record;
}

function responseHeadersOf(headers: Record<string, string | string[] | undefined>): Headers {
  const result = new Headers();
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const one of value) result.append(name, one);
    else result.append(name, value);
  }
  return result;
}
