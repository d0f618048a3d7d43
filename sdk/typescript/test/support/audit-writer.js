/**
 * A separate process for the write-ahead tests: records AUDIT_COUNT audit events through the
 * built SDK (sdk/typescript/dist), prints `written <n>` once every one is on disk, and waits to
 * be killed. Env: GATEWAY_URL, API_KEY, AGENT_ID, WAL, AUDIT_COUNT, AUDIT_FLUSH_MS, AUDIT_BATCH.
 */
/* global setInterval */
const path = require('node:path');
const { GovernanceClient } = require(path.resolve(__dirname, '..', '..', 'dist'));

async function main() {
  const client = await GovernanceClient.create({
    gatewayUrl: process.env.GATEWAY_URL,
    grpcAddress: '127.0.0.1:1',
    apiKey: process.env.API_KEY,
    agentId: process.env.AGENT_ID,
    auditLogPath: process.env.WAL,
    auditFlushMs: Number(process.env.AUDIT_FLUSH_MS),
    auditBatchSize: Number(process.env.AUDIT_BATCH),
  });
  const count = Number(process.env.AUDIT_COUNT);
  for (let index = 0; index < count; index++) {
    await client.audit({ plugin: 'WalPlugin', function: 'Write', decision: 'allow', durationMs: index, resultSummary: `event ${index}` });
  }
  process.stdout.write(`written ${count}\n`);
  setInterval(() => undefined, 60_000); // keeps the process alive until the test kills it
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
