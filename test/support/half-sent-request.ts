import net from 'node:net';

/**
 * A GET whose headers are sent in two parts: the connection is busy with a request from the
 * first part on, so a server that shuts down meanwhile keeps it and answers once the rest
 * arrives (what a request in flight at SIGTERM sees, e.g. a load balancer's probe).
 */
export class HalfSentRequest {
  private readonly socket: net.Socket;
  private readonly answer: Promise<{ status: number; headers: string; body: string }>;

  private constructor(
    url: string,
    private readonly path: string,
  ) {
    const { hostname, port } = new URL(url);
    this.socket = net.connect(Number(port), hostname);
    let received = '';
    this.socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    this.answer = new Promise((resolve, reject) => {
      this.socket.once('error', reject);
      this.socket.once('close', () => {
        const [head, ...rest] = received.split('\r\n\r\n');
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
        if (Number.isNaN(status)) reject(new Error(`no HTTP answer: ${JSON.stringify(received)}`));
        else resolve({ status, headers: head, body: rest.join('\r\n\r\n') });
      });
    });
  }

  /** Connects and sends the request line and a header, not yet the blank line ending the headers. */
  static async begin(url: string, path: string): Promise<HalfSentRequest> {
    const request = new HalfSentRequest(url, path);
    await new Promise<void>((resolve, reject) => request.socket.once('connect', resolve).once('error', reject));
    request.socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\n`);
    return request;
  }

  /** Sends the end of the headers; resolves to the answer once the server has closed the connection. */
  async finish(): Promise<{ status: number; headers: string; body: Record<string, unknown> }> {
    this.socket.write('\r\n');
    const { status, headers, body } = await this.answer;
    return { status, headers, body: JSON.parse(body) as Record<string, unknown> };
  }

  destroy(): void {
    this.socket.destroy();
  }
}
