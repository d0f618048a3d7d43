import { createAgent, putPolicies } from './support/org-fixtures';
import { createOrganization, startGateway, TestGateway } from './support/test-gateway';
import { rawRequest, startUpstream, TestUpstream } from './support/upstream';

/** The gateway reads a request target as the upstream routes it (docs/security.md): a `#` in it is refused. */

let upstream: TestUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

it('refuses a request target with "#" (400) rather than decide on a path the upstream does not route', async () => {
  const org = await createOrganization(gateway, 'enterprise', 'Fragment org');
  await putPolicies(gateway, org, [{ name: 'no-admin', condition: 'args.path == "/api/admin"', reason: 'no admin' }]);
  const agent = await createAgent(gateway, org);
  const answer = await rawRequest(gateway.url, '/proxy/api/admin#x', { headers: { authorization: `Bearer ${agent.token}` } });
  expect(answer.status).toBe(400);
  expect(JSON.parse(answer.body.toString()).message).toContain('"#"');
  expect(upstream.received('/api/admin')).toHaveLength(0);
});
