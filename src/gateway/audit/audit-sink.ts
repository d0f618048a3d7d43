import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { DataSource, EntityManager } from 'typeorm';
import type { Logger } from 'pino';
import { AuditBatchStore } from './audit-batch-store';
import { batchRecords, QueuedBatch } from './audit-queue';
import type { SqlClient } from './sql-client';

/** Where the AuditWriter's batches go: written once per call; the writer owns retries. */
export interface AuditSink {
  /**
   * Resolves once the batch is committed, to the ids of the entries left out as already in the
   * trail (`once` only: see AuditBatchStore); rejects (with the SQLSTATE in `code` when known)
   * leaving nothing written.
   */
  write(batch: QueuedBatch, stripPayloads: boolean, once?: boolean): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * Writes in the gateway's own thread, through its data source. Used with the embedded database:
 * PGlite is one session, so the audit trail must share the gateway's only connection.
 */
export class InProcessAuditSink implements AuditSink {
  private readonly store: AuditBatchStore;
  private readonly client: SqlClient;

  constructor(dataSource: DataSource) {
    this.store = new AuditBatchStore();
    this.client = typeOrmClient(dataSource.manager, dataSource);
  }

  write(batch: QueuedBatch, stripPayloads: boolean, once = false): Promise<string[]> {
    return this.store.write(this.client, batchRecords(batch.lines), stripPayloads, once);
  }

  async close(): Promise<void> {}
}

function typeOrmClient(manager: EntityManager, dataSource: DataSource): SqlClient {
  return {
    query: (sql, params) => manager.query(sql, params),
    transaction: (work) => dataSource.transaction((tx) => work(typeOrmClient(tx, dataSource))),
  };
}

/** Messages between the WorkerAuditSink and the audit worker. */
export type AuditWorkerRequest = { type: 'write'; id: number; lines: Uint8Array; stripPayloads: boolean; once: boolean };
export type AuditWorkerReply =
  | { type: 'written'; id: number; present: string[] }
  | { type: 'failed'; id: number; message: string; code?: string }
  | { type: 'log'; level: 'warn' | 'error'; message: string; fields: Record<string, unknown> };
export interface AuditWorkerData {
  databaseUrl: string;
}

interface Pending {
  resolve: (present: string[]) => void;
  reject: (error: Error) => void;
}

/**
 * Writes in a worker thread with its own PostgreSQL connection: the gateway's thread only hands
 * over each batch (its bytes, copied in one block); decoding, numbering, hashing, completing the
 * rows and the database round trips all happen off the request path's thread. A crashed worker
 * is replaced on the next write; its unacknowledged batches are failed, so the writer retries
 * them.
 */
export class WorkerAuditSink implements AuditSink {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(
    private readonly data: AuditWorkerData,
    private readonly logger: Logger,
  ) {}

  write(batch: QueuedBatch, stripPayloads: boolean, once = false): Promise<string[]> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise<string[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // A copy of just the lines (cloning the view would copy its whole buffer), moved rather
      // than cloned again; the queue reuses its own buffer.
      const lines = new Uint8Array(batch.lines);
      worker.postMessage({ type: 'write', id, lines, stripPayloads, once } satisfies AuditWorkerRequest, [lines.buffer]);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }

  private start(): Worker {
    const worker = new Worker(auditWorkerScript(), { workerData: this.data satisfies AuditWorkerData });
    worker.on('message', (reply: AuditWorkerReply) => this.onReply(reply));
    worker.on('error', (error) => this.logger.error({ err: error }, 'audit worker crashed'));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
      for (const [id, pending] of this.pending) {
        this.pending.delete(id);
        pending.reject(new Error('audit worker stopped before confirming the batch'));
      }
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private onReply(reply: AuditWorkerReply): void {
    if (reply.type === 'log') {
      this.logger[reply.level](reply.fields, reply.message);
      return;
    }
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    if (reply.type === 'written') pending.resolve(reply.present);
    else pending.reject(Object.assign(new Error(reply.message), { code: reply.code }));
  }
}

/** The compiled worker script: next to this file in dist/, or in dist/ when running from sources (tests). */
function auditWorkerScript(): string {
  const beside = path.join(__dirname, 'audit-worker.js');
  if (fs.existsSync(beside)) return beside;
  const built = path.resolve(__dirname, '../../../dist/src/gateway/audit/audit-worker.js');
  if (fs.existsSync(built)) return built;
  throw new Error('dist/src/gateway/audit/audit-worker.js not found: run `npm run build`');
}
