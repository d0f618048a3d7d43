/**
 * The audit worker thread (PostgreSQL mode): receives batches from the WorkerAuditSink and
 * writes them with AuditBatchStore over its own connection, one batch at a time, in order.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { AuditBatchStore } from './audit-batch-store';
import { batchRecords } from './audit-queue';
import type { AuditWorkerData, AuditWorkerReply, AuditWorkerRequest } from './audit-sink';
import type { SqlClient } from './sql-client';

const { databaseUrl } = workerData as AuditWorkerData;
const store = new AuditBatchStore();
let connection: Client | null = null;
let chain: Promise<void> = Promise.resolve();

parentPort!.on('message', (request: AuditWorkerRequest) => {
  // One batch at a time, in arrival order: the hash chains follow the writer's batch order.
  chain = chain.then(() => write(request));
});

async function write(request: AuditWorkerRequest): Promise<void> {
  try {
    const client = await connect();
    const present = await store.write(sqlClient(client), batchRecords(request.lines), request.stripPayloads, request.once);
    reply({ type: 'written', id: request.id, present });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    reply({ type: 'failed', id: request.id, message: error instanceof Error ? error.message : String(error), code: typeof code === 'string' ? code : undefined });
  }
}

async function connect(): Promise<Client> {
  if (connection) return connection;
  const client = new Client({ connectionString: databaseUrl });
  client.on('error', (error) => {
    reply({ type: 'log', level: 'warn', message: 'audit worker lost its database connection', fields: { err: error.message } });
    if (connection === client) connection = null;
  });
  await client.connect();
  connection = client;
  return client;
}

function sqlClient(client: Client): SqlClient {
  const self: SqlClient = {
    query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[],
    copyFrom: (sql: string, data: string) =>
      new Promise<void>((resolve, reject) => {
        const stream = client.query(copyFrom(sql));
        stream.on('finish', resolve);
        stream.on('error', reject);
        stream.end(data);
      }),
    transaction: async <T>(work: (tx: SqlClient) => Promise<T>) => {
      await client.query('BEGIN');
      try {
        const result = await work(self);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    },
  };
  return self;
}

function reply(message: AuditWorkerReply): void {
  parentPort!.postMessage(message);
}
