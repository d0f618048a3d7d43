/**
 * A separate process for the lifecycle test: one check through the built SDK (so the client
 * follows Subscribe), then close(); prints `closed` and must then exit on its own, as the README
 * promises. Env: GATEWAY_URL, GRPC_ADDRESS, API_KEY, AGENT_ID, WAL.
 */
const path = require('node:path');
const { GovernanceClient } = require(path.resolve(__dirname, '..', '..', 'dist'));

async function main() {
  const client = await GovernanceClient.create({
    gatewayUrl: process.env.GATEWAY_URL,
    grpcAddress: process.env.GRPC_ADDRESS,
    apiKey: process.env.API_KEY,
    agentId: process.env.AGENT_ID,
    auditLogPath: process.env.WAL,
  });
  await client.check('FilePlugin', 'ReadFile', { path: '/tmp/notes.txt' });
  await client.close();
  process.stdout.write('closed\n');
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
