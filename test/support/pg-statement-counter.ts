import net from 'node:net';

const EXECUTE = 0x45;
const QUERY = 0x51;

/**
 * A PostgreSQL wire-protocol relay on 127.0.0.1 in front of the test database that counts the
 * statements its clients run (each Execute of the extended protocol and each simple Query), so
 * a test can see how many queries a gateway pointed at `url` issued, on PostgreSQL and on the
 * embedded test database alike. Bytes pass through unchanged in both directions.
 */
export class PgStatementCounter {
  statements = 0;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly url: string,
  ) {}

  /** A relay to the database of `databaseUrl` (TCP or Unix socket). */
  static async start(databaseUrl: string): Promise<PgStatementCounter> {
    const target = new URL(databaseUrl);
    // A host that is a percent-encoded path is the directory of a Unix socket, as `pg` reads it.
    const host = decodeURIComponent(target.hostname);
    const port = Number(target.port || 5432);
    const connectTarget = () => (host.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${port}`) : net.connect(port, host));
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const relayed = new URL(databaseUrl);
    relayed.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const counter = new PgStatementCounter(server, relayed.toString());
    server.on('connection', (client) => counter.relay(client, connectTarget()));
    return counter;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private relay(client: net.Socket, database: net.Socket): void {
    for (const socket of [client, database]) {
      this.sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => {
        this.sockets.delete(socket);
        client.destroy();
        database.destroy();
      });
    }
    database.pipe(client);
    let started = false;
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      database.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        // The startup message has no type byte: a length, then the protocol version.
        const headerBytes = started ? 5 : 4;
        if (pending.length < headerBytes) return;
        const total = started ? 1 + pending.readInt32BE(1) : pending.readInt32BE(0);
        if (pending.length < total) return;
        if (started && (pending[0] === EXECUTE || pending[0] === QUERY)) this.statements++;
        started = true;
        pending = pending.subarray(total);
      }
    });
  }
}
