import net from 'node:net';

/** A TCP relay on a fixed port to a local target, opened and closed at will: a service (a gateway's gRPC port, Redis) that comes and goes. */
export class TcpRelay {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  /** While held: what is to be written once released. */
  private held: Array<() => void> | null = null;

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
      this.forward(client, target);
      this.forward(target, client);
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.port, '127.0.0.1', resolve));
    this.server = server;
  }

  /** Holds every byte relayed from now on, connections left open: a peer that stops answering (a network partition, a frozen server). */
  hold(): void {
    this.held ??= [];
  }

  /** Delivers what was held, in order, and relays again. */
  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const deliver of held) deliver();
  }

  private forward(from: net.Socket, to: net.Socket): void {
    from.on('data', (chunk: Buffer) => {
      if (this.held === null) to.write(chunk);
      else this.held.push(() => to.write(chunk));
    });
    from.on('end', () => to.end());
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
