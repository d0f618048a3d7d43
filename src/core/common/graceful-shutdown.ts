import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import type { Logger } from 'pino';
import { ShutdownState } from './shutdown-state';

/**
 * Ends the gateway on SIGTERM or SIGINT within SHUTDOWN_TIMEOUT_MS (docs/architecture.md
 * "Shutdown"): stop accepting, close idle keep-alive connections, answer what is in flight with
 * `Connection: close` so no client reuses the socket, then close the app (the audit queue
 * drains, the database closes) and exit 0. Past the bound the process exits 1 with a log line.
 *
 * `server.close()` alone does not end: it closes the connections idle at that moment, but a
 * keep-alive connection whose request was in flight stays open once answered, until the client
 * or `keepAliveTimeout` (65 s) closes it.
 */
export class GracefulShutdown {
  /** Each open connection with the last response begun on it (null before its first request). */
  private readonly connections = new Map<Socket, ServerResponse | null>();
  private draining = false;

  constructor(
    private readonly app: INestApplication,
    private readonly logger: Logger,
    private readonly timeoutMs: number,
    private readonly exit: (code: number) => void = (code) => process.exit(code),
    private readonly state: ShutdownState | null = shutdownStateOf(app),
  ) {
    const server = this.server;
    server.on('connection', this.opened);
    server.prependListener('request', this.requested);
  }

  /** Shuts down on the first of `signals`; later ones are ignored (npm and the terminal may both send one). */
  listen(signals: NodeJS.Signals[]): void {
    for (const signal of signals) process.on(signal, (received: NodeJS.Signals) => void this.shutdown(received));
  }

  /** Drains and closes everything, then exits: 0 when done in time, 1 on a failure or past the bound. */
  async shutdown(reason: string): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    this.state?.begin();
    // Not unref'd: the bound must hold even if a pending close keeps nothing else alive.
    const forced = setTimeout(() => this.force(), this.timeoutMs);
    this.logger.info({ reason, timeoutMs: this.timeoutMs, connections: this.connections.size }, 'shutting down: answering the requests in flight');
    try {
      await this.closeServer();
      await this.app.close();
    } catch (error) {
      clearTimeout(forced);
      this.logger.error({ err: error }, 'shutdown failed');
      return this.exit(1);
    }
    clearTimeout(forced);
    this.logger.info('shutdown complete');
    this.exit(0);
  }

  private get server(): Server {
    return this.app.getHttpServer() as Server;
  }

  /** Stops accepting and resolves once every connection has closed. */
  private closeServer(): Promise<void> {
    // Node's close also closes the connections idle right now; the others end after their answer.
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const [socket, response] of this.connections) if (response !== null) endAfter(socket, response);
    return closed;
  }

  private force(): void {
    this.logger.error(
      { timeoutMs: this.timeoutMs, connections: this.connections.size },
      'shutdown not finished within SHUTDOWN_TIMEOUT_MS: exiting now; requests still in flight are cut off and audit entries not yet written are lost',
    );
    this.exit(1);
  }

  private readonly opened = (socket: Socket): void => {
    this.connections.set(socket, null);
    socket.once('close', () => this.connections.delete(socket));
  };

  private readonly requested = (request: IncomingMessage, response: ServerResponse): void => {
    this.connections.set(request.socket, response);
    // A request that arrives on a kept-alive connection while draining is answered, then the connection closes.
    if (this.draining) response.shouldKeepAlive = false;
  };
}

/** The app's ShutdownState (ShutdownStateModule), null in an app without one. */
function shutdownStateOf(app: INestApplication): ShutdownState | null {
  try {
    return app.get(ShutdownState, { strict: false });
  } catch {
    return null;
  }
}

/** Closes the connection once `response` is sent: with `Connection: close` while its headers are not yet written. */
function endAfter(socket: Socket, response: ServerResponse): void {
  if (response.writableFinished) return;
  if (!response.headersSent) {
    response.shouldKeepAlive = false;
    return;
  }
  response.once('finish', () => socket.end());
}
