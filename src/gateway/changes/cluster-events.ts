import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import Redis from 'ioredis';
import { Logger } from 'pino';
import { AppConfig } from '../../core/config/app-config';
import { REDIS_COMMAND_TIMEOUT_MS } from '../common/redis-command-timeout';
import { redactUrl } from '../../core/config/env-reader';
import { DatabaseConnection } from '../database/database-connection';
import { LOGGER } from '../../core/logging/logging.module';
import { ClusterEvent, ClusterEventHandler } from './cluster-event';

const CHANNEL = 'agentgov_events';
const RECONNECT_MS = 1000;

interface Envelope {
  origin: string;
  event: ClusterEvent;
}

/**
 * Publishes events to every gateway instance: handlers here run synchronously before publish
 * returns (so a revocation holds on this instance before the API answers), and other instances
 * hear it through Redis pub/sub when REDIS_URL is set, else PostgreSQL LISTEN/NOTIFY. The
 * embedded database serves one process only, so there the events stay local.
 */
@Injectable()
export class ClusterEvents implements OnModuleInit, OnApplicationShutdown {
  private readonly instanceId = randomUUID();
  private readonly handlers = new Set<ClusterEventHandler>();
  private transport?: ClusterTransport;

  constructor(
    private readonly config: AppConfig,
    private readonly connection: DatabaseConnection,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    const deliver = (payload: string) => this.receive(payload);
    const resync = () => this.dispatch({ type: 'resync' });
    if (this.config.redis.url) this.transport = new RedisTransport(this.config.redis.url, deliver, resync, this.logger);
    else if (!this.connection.embedded) this.transport = new PostgresTransport(this.connection.url, deliver, resync, this.logger);
    await this.transport?.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.transport?.stop();
  }

  /** Registers a handler; returns its removal. */
  subscribe(handler: ClusterEventHandler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /** Runs local handlers now, then tells the other instances. */
  async publish(event: ClusterEvent): Promise<void> {
    this.dispatch(event);
    if (!this.transport) return;
    try {
      await this.transport.publish(JSON.stringify({ origin: this.instanceId, event } satisfies Envelope));
    } catch (error) {
      this.logger.error({ err: error, event: event.type }, 'cluster event not delivered to other instances');
    }
  }

  private receive(payload: string): void {
    let envelope: Envelope;
    try {
      envelope = JSON.parse(payload) as Envelope;
    } catch {
      return;
    }
    if (envelope.origin !== this.instanceId) this.dispatch(envelope.event);
  }

  private dispatch(event: ClusterEvent): void {
    for (const handler of this.handlers) {
      try {
        handler(event);
      } catch (error) {
        this.logger.error({ err: error, event: event.type }, 'cluster event handler failed');
      }
    }
  }
}

interface ClusterTransport {
  start(): Promise<void>;
  publish(payload: string): Promise<void>;
  stop(): Promise<void>;
}

/** LISTEN on a dedicated connection, reconnecting (and asking for a resync) when it drops. */
class PostgresTransport implements ClusterTransport {
  private listener?: Client;
  private publisher?: Client;
  private stopped = false;
  private reconnectTimer?: NodeJS.Timeout;

  constructor(
    private readonly url: string,
    private readonly deliver: (payload: string) => void,
    private readonly resync: () => void,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    await this.listen();
    this.publisher = await this.connect();
  }

  async publish(payload: string): Promise<void> {
    if (!this.publisher) this.publisher = await this.connect();
    try {
      await this.publisher.query('SELECT pg_notify($1, $2)', [CHANNEL, payload]);
    } catch (error) {
      this.publisher = undefined;
      throw error;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    await Promise.allSettled([this.listener?.end(), this.publisher?.end()]);
  }

  private async connect(): Promise<Client> {
    const client = new Client({ connectionString: this.url });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = await this.connect();
    if (this.stopped) {
      await client.end();
      return;
    }
    client.on('notification', (message) => message.payload !== undefined && this.deliver(message.payload));
    client.on('end', () => this.reconnectLater());
    await client.query(`LISTEN ${CHANNEL}`);
    this.listener = client;
  }

  private reconnectLater(): void {
    if (this.stopped) return;
    this.logger.warn('cluster event listener lost its connection; reconnecting');
    this.reconnectTimer = setTimeout(() => {
      this.listen()
        .then(() => this.resync())
        .catch(() => this.reconnectLater());
    }, RECONNECT_MS);
    this.reconnectTimer.unref();
  }
}

/** Redis pub/sub; ioredis reconnects by itself, and each re-subscribe triggers a resync. */
class RedisTransport implements ClusterTransport {
  private readonly subscriber: Redis;
  private readonly publisher: Redis;
  private subscribedOnce = false;
  /** The last connection error: what a failed start reports (ioredis itself only says "Connection is closed."). */
  private lastError = '';

  constructor(
    private readonly url: string,
    private readonly deliver: (payload: string) => void,
    private readonly resync: () => void,
    logger: Logger,
  ) {
    this.subscriber = new Redis(url, { lazyConnect: true });
    // A publish that times out is logged as not delivered to the other instances; the change is in force here.
    this.publisher = new Redis(url, { lazyConnect: true, commandTimeout: REDIS_COMMAND_TIMEOUT_MS });
    for (const client of [this.subscriber, this.publisher]) {
      client.on('error', (error: Error) => {
        this.lastError = error.message;
        logger.warn({ err: error.message }, 'redis connection error');
      });
    }
  }

  async start(): Promise<void> {
    this.subscriber.on('message', (_channel: string, payload: string) => this.deliver(payload));
    this.subscriber.on('ready', () => {
      if (this.subscribedOnce) this.resync();
      this.subscribedOnce = true;
    });
    try {
      await Promise.all([this.subscriber.connect(), this.publisher.connect()]);
      await this.subscriber.subscribe(CHANNEL);
    } catch (error) {
      // Left connecting, the clients would retry for ever behind a start that has failed.
      await this.stop();
      const reason = this.lastError || (error instanceof Error ? error.message : String(error));
      throw new Error(`REDIS_URL=${redactUrl(this.url)} cannot be reached (${reason}); with REDIS_URL set, instances share revocations and counters through it, so the gateway does not start without it`, { cause: error });
    }
  }

  async publish(payload: string): Promise<void> {
    await this.publisher.publish(CHANNEL, payload);
  }

  async stop(): Promise<void> {
    this.subscriber.disconnect();
    this.publisher.disconnect();
  }
}
