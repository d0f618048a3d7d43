import net from 'node:net';

/** A TCP relay on a fixed port to a local target, opened and closed at will: a service (a gateway's gRPC port, Redis) that comes and goes. */
export class TcpRelay {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    readonly port: number,
    private readonly targetPort: number,
  ) {}

  /** A relay listening on `port` (127.0.0.1) to `targetPort`. */
  static async listen(port: number, targetPort: number): Promise<TcpRelay> {
    const relay = new TcpRelay(port, targetPort);
    await relay.open();
    return relay;
  }

  async open(): Promise<void> {
    const server = net.createServer((client) => {
      const target = net.connect(this.targetPort, '127.0.0.1');
      for (const socket of [client, target]) {
        this.sockets.add(socket);
        socket.on('error', () => socket.destroy());
        socket.on('close', () => this.sockets.delete(socket));
      }
      client.pipe(target).pipe(client);
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.port, '127.0.0.1', resolve));
    this.server = server;
  }

  /** Stops listening and cuts every relayed connection. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
