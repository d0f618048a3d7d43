/**
 * Worker thread serving one in-memory PGlite to many concurrent connections over the PostgreSQL
 * wire protocol, for the e2e suites (plain JavaScript: it runs in a worker, outside ts-jest).
 *
 * PGlite is a single session, so connections take turns. A turn is a whole request up to its
 * Sync (or a simple Query), never a single message: otherwise another connection's Parse could
 * replace this one's unnamed statement between its Parse and Bind ("bind message supplies 2
 * parameters, but prepared statement requires 1"), which is what @electric-sql/pglite-socket's
 * multiplexer does. A connection inside a transaction keeps its turns until the transaction
 * ends; one that disconnects mid-transaction is rolled back. The gateway's embedded mode uses
 * pglite-socket with a single connection, where interleaving cannot happen.
 *
 * LISTEN/NOTIFY reach the connections that listen, as on PostgreSQL: PGlite's one session writes
 * a NotificationResponse into the output of whichever statement committed the NOTIFY (a CLI's
 * policy change, say), so the server takes each one out of that output and sends it to every
 * connection that ran LISTEN on its channel (a running gateway's cluster event listener).
 * Without that, a change made by another process never reached a gateway on this database.
 *
 * `COPY ... FROM STDIN` (the gateway's audit writer on PostgreSQL) is served here, since PGlite's
 * single-user backend cannot read CopyData from the protocol: the server answers CopyInResponse,
 * collects the data up to CopyDone and runs the statement as PGlite's `COPY ... FROM '/dev/blob'`.
 */
const { Blob } = require('node:buffer');
const net = require('node:net');
const { parentPort } = require('node:worker_threads');
const { PGlite } = require('@electric-sql/pglite');

const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
const SYNC = 0x53;
const QUERY = 0x51;
const TERMINATE = 0x58;
const COPY_DATA = 0x64;
const COPY_DONE = 0x63;
const COPY_FAIL = 0x66;
const COPY_IN_RESPONSE = 0x47;
const COMMAND_COMPLETE = 0x43;
const ERROR_RESPONSE = 0x45;
const READY_FOR_QUERY = 0x5a;
const COPY_FROM_STDIN = /^\s*COPY\s+([\s\S]+?)\s+FROM\s+STDIN\s*;?\s*$/i;
const NOTIFICATION_RESPONSE = 0x41;
const LISTEN = /^\s*(UN)?LISTEN\s+"?([A-Za-z_][\w$]*)"?\s*;?\s*$/i;

/** Connections listening, by channel. */
const listeners = new Map();

const queue = [];
let owner = null;
let running = false;
let db;

function receive(connection, chunk) {
  connection.buffer = Buffer.concat([connection.buffer, chunk]);
  for (;;) {
    const buffer = connection.buffer;
    if (!connection.started) {
      if (buffer.length < 8) return;
      const length = buffer.readInt32BE(0);
      const code = buffer.readInt32BE(4);
      if (code === SSL_REQUEST) {
        connection.buffer = buffer.subarray(8);
        connection.socket.write('N');
        continue;
      }
      if (code === CANCEL_REQUEST) {
        connection.socket.end();
        return;
      }
      if (buffer.length < length) return;
      connection.started = true;
      connection.buffer = buffer.subarray(length);
      enqueue(connection, buffer.subarray(0, length));
      continue;
    }
    if (buffer.length < 5) return;
    const total = 1 + buffer.readInt32BE(1);
    if (buffer.length < total) return;
    const type = buffer[0];
    const message = buffer.subarray(0, total);
    connection.buffer = buffer.subarray(total);
    if (type === TERMINATE) {
      connection.socket.end();
      return;
    }
    if (connection.copy) {
      receiveCopy(connection, type, message);
      continue;
    }
    if (type === QUERY && startCopy(connection, message)) continue;
    if (type === QUERY) noteListen(connection, message);
    connection.group.push(message);
    if (type === SYNC || type === QUERY) {
      enqueue(connection, Buffer.concat(connection.group));
      connection.group = [];
    }
  }
}

/** Records a LISTEN or UNLISTEN sent as a simple Query (as `pg` sends them). */
function noteListen(connection, query) {
  const match = LISTEN.exec(query.toString('utf8', 5, query.length - 1));
  if (!match) return;
  const channel = match[2].toLowerCase();
  if (match[1]) {
    listeners.get(channel)?.delete(connection);
    return;
  }
  if (!listeners.has(channel)) listeners.set(channel, new Set());
  listeners.get(channel).add(connection);
}

/**
 * The output of one unit, passed on to its connection, but for NotificationResponse messages,
 * which go to the connections listening on their channel. Messages may span chunks: an
 * incomplete one waits for the rest.
 */
function routedOutput(connection) {
  let pending = Buffer.alloc(0);
  return (data) => {
    pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
    const passed = [];
    let offset = 0;
    while (pending.length - offset >= 5) {
      const total = 1 + pending.readInt32BE(offset + 1);
      if (pending.length - offset < total) break;
      const one = pending.subarray(offset, offset + total);
      if (one[0] === NOTIFICATION_RESPONSE) notify(Buffer.from(one));
      else passed.push(one);
      offset += total;
    }
    pending = Buffer.from(pending.subarray(offset));
    if (passed.length > 0 && !connection.socket.destroyed) connection.socket.write(Buffer.concat(passed));
  };
}

/** A NotificationResponse (process id, channel, payload) to every connection listening on its channel. */
function notify(notification) {
  const end = notification.indexOf(0, 9);
  const channel = notification.toString('utf8', 9, end).toLowerCase();
  for (const connection of listeners.get(channel) ?? []) if (!connection.socket.destroyed) connection.socket.write(notification);
}

function enqueue(connection, bytes) {
  queue.push({ connection, bytes: Buffer.from(bytes) });
  void drain();
}

/** A simple Query of COPY FROM STDIN: answer CopyInResponse (text format) and collect its data. */
function startCopy(connection, query) {
  const sql = query.toString('utf8', 5, query.length - 1);
  const match = COPY_FROM_STDIN.exec(sql);
  if (!match) return false;
  const columns = /\(([^)]*)\)/.exec(match[1]);
  const count = columns ? columns[1].split(',').length : 0;
  // Overall format 0 (text), then the column count and each column's format (all 0).
  const body = Buffer.alloc(1 + 2 + 2 * count);
  body.writeInt16BE(count, 1);
  connection.copy = { target: match[1], chunks: [] };
  connection.socket.write(message(COPY_IN_RESPONSE, body));
  return true;
}

function receiveCopy(connection, type, data) {
  const copy = connection.copy;
  if (type === COPY_DATA) {
    copy.chunks.push(Buffer.from(data.subarray(5)));
    return;
  }
  if (type !== COPY_DONE && type !== COPY_FAIL) return;
  connection.copy = null;
  queue.push({ connection, copy: { target: copy.target, data: Buffer.concat(copy.chunks), failed: type === COPY_FAIL } });
  void drain();
}

/** Runs a collected COPY and answers like PostgreSQL: CommandComplete or ErrorResponse, then ReadyForQuery. */
async function runCopy(unit) {
  const { target, data, failed } = unit.copy;
  let reply;
  let failedInTransaction = false;
  try {
    if (failed) throw Object.assign(new Error('COPY from stdin failed'), { code: '57014' });
    const result = await db.query(`COPY ${target} FROM '/dev/blob'`, [], { blob: new Blob([data]) });
    reply = message(COMMAND_COMPLETE, cString(`COPY ${result.affectedRows ?? 0}`));
  } catch (error) {
    failedInTransaction = true;
    reply = message(ERROR_RESPONSE, Buffer.concat([field('S', 'ERROR'), field('C', error.code || 'XX000'), field('M', error.message || String(error)), Buffer.from([0])]));
  }
  const status = db.isInTransaction() ? (failedInTransaction ? 'E' : 'T') : 'I';
  if (!unit.connection.socket.destroyed) unit.connection.socket.write(Buffer.concat([reply, message(READY_FOR_QUERY, Buffer.from(status))]));
}

function message(type, body) {
  const header = Buffer.alloc(5);
  header[0] = type;
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

function cString(text) {
  return Buffer.concat([Buffer.from(text, 'utf8'), Buffer.from([0])]);
}

function field(code, text) {
  return Buffer.concat([Buffer.from(code), cString(text)]);
}

async function drain() {
  if (running) return;
  running = true;
  try {
    for (;;) {
      const index = owner === null ? 0 : queue.findIndex((unit) => unit.connection === owner);
      if (index < 0 || queue.length === 0) return;
      const [unit] = queue.splice(index, 1);
      try {
        if (unit.copy) await runCopy(unit);
        else {
          const output = routedOutput(unit.connection);
          await db.runExclusive(() => db.execProtocolRawStream(unit.bytes, { onRawData: (data) => output(Buffer.from(data)) }));
        }
      } catch {
        // What the backend could not take ends that connection, never the server.
        unit.connection.socket.destroy();
      }
      // A connection that closed while its statement ran (a relay cutting it) has nobody left to end its transaction.
      if (unit.connection.closed && db.isInTransaction()) await db.exec('ROLLBACK');
      owner = db.isInTransaction() ? unit.connection : null;
    }
  } finally {
    running = false;
  }
}

async function release(connection) {
  for (const listening of listeners.values()) listening.delete(connection);
  for (let i = queue.length - 1; i >= 0; i--) if (queue[i].connection === connection) queue.splice(i, 1);
  if (owner !== connection) return;
  owner = null;
  // Not inside runExclusive: exec takes the same lock, and would wait for itself for ever.
  if (db.isInTransaction()) await db.exec('ROLLBACK');
  void drain();
}

async function main() {
  db = await PGlite.create();
  const sockets = new Set();
  const server = net.createServer((socket) => {
    const connection = { socket, buffer: Buffer.alloc(0), started: false, group: [], closed: false };
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('data', (chunk) => receive(connection, chunk));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      connection.closed = true;
      sockets.delete(socket);
      void release(connection);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  parentPort.on('message', async (message) => {
    if (message.type !== 'stop') return;
    // Stopping is also how tests take the database down under a running gateway: drop its connections.
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of sockets) socket.destroy();
    await closed;
    await db.close();
    parentPort.postMessage({ type: 'stopped' });
  });
  parentPort.postMessage({ type: 'ready', port: server.address().port });
}

main().catch((error) => parentPort.postMessage({ type: 'failed', message: String((error && error.message) || error) }));
