import { currentSession, GovernanceClient, GovernanceOptions, inSession, PolicyDeniedError } from '../src';
import { freePort, SdkGateway, tempWal } from './support/sdk-gateway';

/**
 * Sessions (docs/policies.md "Sessions"): the three-step attack of the docs through the SDK. A
 * customer record read, then an untrusted web page fetched, then a mail sent: each allowed alone,
 * the mail denied in the session that did both, allowed in another session of the same agent.
 */

const MAIL = { to: 'someone@example.com' };
const POLICY = 'sdk-typescript-exfiltration';

let gateway: SdkGateway;
let agentId: string;
const clients: GovernanceClient[] = [];

beforeAll(async () => {
  gateway = await SdkGateway.start();
  agentId = await gateway.createAgent('sdk-typescript-sessions');
  // Session labels only (no scope: agent), so only the sessions that took the steps carry them.
  const policy = `name: ${POLICY}
match: { plugin: "Session*" }
rules:
  - name: reads-customers
    condition: action == "SessionCrm.GetCustomer"
    action: label
    labels: [private_data]
    reason: Customer records were read
  - name: fetches-web
    condition: action == "SessionWeb.Fetch"
    action: label
    labels: [untrusted_content]
    reason: An untrusted web page was fetched
  - name: no-way-out
    condition: >
      action == "SessionMail.Send"
      and session.labels.has("private_data") and session.labels.has("untrusted_content")
    action: deny
    reason: Private data and untrusted content in one session; nothing leaves by mail
`;
  const response = await gateway.admin('PUT', `/admin/policies/${POLICY}`, policy, { 'content-type': 'application/yaml' });
  if (response.status >= 300) throw new Error(`policy not stored: ${response.text}`);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((each) => each.close()));
  await gateway?.stop();
});

async function client(options: Partial<GovernanceOptions> = {}): Promise<GovernanceClient> {
  const created = await GovernanceClient.create({
    gatewayUrl: gateway.url,
    grpcAddress: `127.0.0.1:${gateway.grpcPort}`,
    apiKey: gateway.apiKey,
    agentId,
    auditLogPath: tempWal(),
    ...options,
  });
  clients.push(created);
  return created;
}

describe.each([
  ['grpc', async () => ({})],
  // Nothing listens at the gRPC address: every check goes over /v1/check.
  ['http', async () => ({ grpcAddress: `127.0.0.1:${await freePort()}` })],
] as const)('over %s', (transport, addresses) => {
  it('denies the third step in the session that took the first two, and not in another session', async () => {
    const session = `conversation-${transport}`;
    const governance = await client({ ...(await addresses()), sessionId: session });

    expect(await governance.check('SessionCrm', 'GetCustomer', { id: 'cus_42' })).toMatchObject({ allowed: true, via: transport });
    expect(await governance.check('SessionWeb', 'Fetch', { url: 'https://example.com/page' })).toMatchObject({ allowed: true });
    const denied = await governance.check('SessionMail', 'Send', MAIL).catch((error: unknown) => error);
    expect(denied).toBeInstanceOf(PolicyDeniedError);
    expect((denied as PolicyDeniedError).result).toMatchObject({ policy: POLICY, rule: 'no-way-out', cacheable: false });

    // Another session of the same agent, named for one flow over the client's own: it read and fetched nothing.
    await inSession(`other-${transport}`, async () => {
      expect(await governance.check('SessionMail', 'Send', MAIL)).toMatchObject({ allowed: true });
      expect(await governance.guard('SessionMail', 'Send', MAIL, () => 'sent')).toBe('sent');
    });
    // The agent's own scope (no session named) is another session too.
    expect(await (await client(await addresses())).check('SessionMail', 'Send', MAIL)).toMatchObject({ allowed: true });
    // The first session still remembers, guard() included: the mail is never sent.
    let sent = false;
    await expect(governance.guard('SessionMail', 'Send', MAIL, () => (sent = true))).rejects.toBeInstanceOf(PolicyDeniedError);
    expect(sent).toBe(false);
  });
});

it('a session named by inSession reaches every check of the flow, across awaits, and ends with it', async () => {
  const governance = await client();
  const rule = await inSession('async-flow', async () => {
    await governance.guard('SessionCrm', 'GetCustomer', { id: 'cus_7' }, async () => 'customer');
    await new Promise((resolve) => setTimeout(resolve, 10));
    await governance.guard('SessionWeb', 'Fetch', { url: 'https://example.com' }, async () => 'page');
    return governance.guard('SessionMail', 'Send', MAIL, async () => 'sent').then(
      () => 'sent',
      (error: PolicyDeniedError) => error.result.rule,
    );
  });
  expect(rule).toBe('no-way-out');
  expect(currentSession()).toBeUndefined();
});

it.each(['', 'has space', 'x'.repeat(129), 'semi;colon'])('refuses the session id %j before anything is sent', async (bad) => {
  await expect(client({ sessionId: bad })).rejects.toThrow('sessionId must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  expect(() => inSession(bad, () => undefined)).toThrow('sessionId must be 1 to 128 characters');
});
