import { call, TestResponse } from './http-client';
import type { TestGateway, TestOrganization } from './test-gateway';

/** Agents, policies and audit reads of one organization, through the admin API as an operator uses it. */

export interface TestAgent {
  id: string;
  name: string;
  token: string;
  trustTier: string;
  tags: string[];
  createdAt: string;
}

export interface PolicySpec {
  name: string;
  /** `match.action` glob; none applies the policy to everything. */
  action?: string;
  condition: string;
  reason?: string;
}

export interface AuditEntryView {
  seq: number;
  agentId: string | null;
  action: string;
  decision: string;
  policyName: string | null;
  rule: string | null;
  reason: string | null;
  status: number | null;
  latencyMs: number | null;
  rateLimited: boolean;
  delegationChain: string[] | null;
  source: string;
  details: Record<string, unknown> | null;
}

export async function createAgent(gateway: TestGateway, org: TestOrganization, body: Record<string, unknown> = {}): Promise<TestAgent> {
  const response = await call<TestAgent>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'agent', ...body } });
  expect(response.status).toBe(201);
  return response.body;
}

export async function revokeAgent(gateway: TestGateway, org: TestOrganization, agentId: string): Promise<{ revokedAt: string }> {
  const response = await call<{ revokedAt: string }>(gateway.url, 'DELETE', `/admin/agents/${agentId}`, { adminToken: org.adminToken });
  expect(response.status).toBe(200);
  return response.body;
}

/** Deny policies as the YAML an operator writes. */
export async function putPolicies(gateway: TestGateway, org: TestOrganization, policies: PolicySpec[]): Promise<void> {
  for (const { name, action, condition, reason } of policies) {
    const yaml = [
      `name: ${name}`,
      ...(action === undefined ? [] : [`match: { action: ${JSON.stringify(action)} }`]),
      'rules:',
      `  - name: ${name}-rule`,
      `    condition: ${JSON.stringify(condition)}`,
      '    action: deny',
      `    reason: ${JSON.stringify(reason ?? `${name} refuses`)}`,
      '',
    ].join('\n');
    const response = await call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: org.adminToken, body: yaml, headers: { 'content-type': 'application/yaml' } });
    expect([200, 201]).toContain(response.status);
  }
}

/** One request through the governed proxy with a bearer token. */
export function proxy(gateway: TestGateway, token: string | undefined, method: string, path: string, headers: Record<string, string> = {}): Promise<TestResponse> {
  return call(gateway.url, method, `/proxy${path}`, { bearer: token, headers });
}

/**
 * Polls the audit trail until `count` entries match the query (entries are written
 * asynchronously); newest first by their place in the hash chain, which is recording order.
 */
export async function auditEntries(gateway: TestGateway, org: TestOrganization, query: string, count: number): Promise<AuditEntryView[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const response = await call<{ entries: AuditEntryView[] }>(gateway.url, 'GET', `/admin/audit?limit=1000&${query}`, { adminToken: org.adminToken });
    expect(response.status).toBe(200);
    if (response.body.entries.length >= count || Date.now() > deadline) return response.body.entries.sort((a, b) => b.seq - a.seq);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
