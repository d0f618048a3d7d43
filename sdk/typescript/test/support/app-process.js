/**
 * One process of an agent application, as a user writes it: a client with the default audit
 * write-ahead file (auditDirectory, no auditLogPath) and APP_EVENTS audit
 * events, then close(). Prints `done <pending>` and exits; with APP_HANG it prints `written`
 * once the events are recorded and waits to be killed instead.
 * Env: GATEWAY_URL, GRPC_ADDRESS, API_KEY, AGENT_ID, AUDIT_DIR, APP_EVENTS, APP_NAME, APP_HANG.
 */
/* global setInterval */
const path = require('node:path');
const { GovernanceClient } = require(path.resolve(__dirname, '..', '..', 'dist'));

async function main() {
  const hang = process.env.APP_HANG === '1';
  const client = await GovernanceClient.create({
    gatewayUrl: process.env.GATEWAY_URL,
    grpcAddress: process.env.GRPC_ADDRESS,
    apiKey: process.env.API_KEY,
    agentId: process.env.AGENT_ID,
    auditDirectory: process.env.AUDIT_DIR,
    auditFlushMs: hang ? 3_600_000 : 50,
    auditBatchSize: 500,
  });
  const count = Number(process.env.APP_EVENTS);
  for (let index = 0; index < count; index++) {
    await client.audit({ plugin: 'AppPlugin', function: 'Work', decision: 'allow', durationMs: index, resultSummary: `${process.env.APP_NAME} ${index}` });
  }
  if (hang) {
    process.stdout.write('written\n');
    setInterval(() => undefined, 60_000); // keeps the process alive until the test kills it
    return;
  }
  await client.close();
  process.stdout.write(`done ${client.pendingAudit}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
