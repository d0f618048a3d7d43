import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as an OTLP/HTTP JSON export carries it, with its attributes made a plain object and its service's name. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: Array<{ spans: Array<Omit<ReceivedSpan, 'service' | 'attributes'> & { attributes?: OtlpAttribute[] }> }>;
  }>;
}

/**
 * A local OpenTelemetry receiver of OTLP/HTTP in JSON (`POST /v1/traces`), standing in for a
 * collector: it keeps every span it is sent, with the headers of each export.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly exportHeaders: http.IncomingHttpHeaders[] = [];

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.method !== 'POST' || request.url !== '/v1/traces' || !String(request.headers['content-type']).startsWith('application/json')) {
          response.writeHead(404).end();
          return;
        }
        receiver.take(request.headers, JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport);
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    return receiver;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private take(headers: http.IncomingHttpHeaders, body: OtlpExport): void {
    this.exportHeaders.push(headers);
    for (const { resource, scopeSpans } of body.resourceSpans) {
      const service = String(attributesOf(resource.attributes)['service.name']);
      for (const { spans } of scopeSpans) for (const span of spans) this.spans.push({ ...span, service, attributes: attributesOf(span.attributes ?? []) });
    }
  }
}

function attributesOf(attributes: OtlpAttribute[]): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const { key, value } of attributes) plain[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue));
  return plain;
}
