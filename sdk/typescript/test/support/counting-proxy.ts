import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP forwarder to `target` that counts the POST /v1/audit requests going through it: how
 * many requests a client's audit events took. While `held`, it answers 503 without forwarding (a
 * gateway that is away).
 */
export class CountingProxy {
  auditRequests = 0;
  held = false;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async listen(target: string): Promise<CountingProxy> {
    const upstream = new URL(target);
    const server = http.createServer((request, response) => {
      if (proxy.held) {
        request.resume();
        response.writeHead(503).end('{"message":"held"}');
        return;
      }
      if (request.method === 'POST' && request.url === '/v1/audit') proxy.auditRequests++;
      const forwarded = http.request({ host: upstream.hostname, port: upstream.port, method: request.method, path: request.url, headers: request.headers }, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      forwarded.on('error', () => response.writeHead(502).end());
      request.pipe(forwarded);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new CountingProxy(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return proxy;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
