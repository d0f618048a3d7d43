import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { call } from '../support/http-client';
import { eventually } from '../support/processes';
import { launchChromium } from './browser';
import { READ_FILE_CHANGED, SeededAgent, SeededGateway, SIDECAR_ID, startSeededGateway } from './seeded-gateway';

/**
 * The admin dashboard at /dashboard (README, "Dashboard") in a real browser, against a gateway
 * started from dist/ and seeded through its APIs: every number a page shows is checked against
 * what the API answers. Each page is saved as a screenshot in docs/screenshots/.
 */

const SCREENSHOTS = path.resolve(__dirname, '../../docs/screenshots');
const BUILT_DASHBOARD = path.resolve(__dirname, '../../dist/dashboard/index.html');
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

const BIG_REFUNDS = `name: big-refunds
match: { action: "write:refunds*" }
rules:
  - name: over-100
    condition: args.amount > 100
    action: require_approval
    reason: Refunds over 100 need a person
`;

let gateway: SeededGateway;
let browser: Browser;
const contexts: BrowserContext[] = [];
const pageErrors: string[] = [];
const requestsElsewhere: string[] = [];

/** What the pages may ask for: their own files, and the public admin and analytics APIs (the trust score is one). */
const DASHBOARD_REQUESTS = /^\/(dashboard\/|admin\/|api\/v1\/trust\/)/;

beforeAll(async () => {
  if (!fs.existsSync(BUILT_DASHBOARD)) throw new Error(`${BUILT_DASHBOARD} is missing: run \`npm run build\` first (it builds web/dashboard into dist/dashboard)`);
  browser = await launchChromium();
  gateway = await startSeededGateway();
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
});

afterEach(async () => {
  for (const context of contexts.splice(0)) await context.close();
  // A script error is how a page goes blank, and a refused script or style a content security
  // policy that breaks the page: none may happen, whatever the test checked.
  expect(pageErrors.splice(0)).toEqual([]);
  expect(requestsElsewhere.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
});

async function openPage(viewport = DESKTOP): Promise<Page> {
  const context = await browser.newContext({ viewport, baseURL: gateway.url });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gateway.url });
  contexts.push(context);
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(`${page.url()}: ${error.message}`));
  page.on('console', (message) => {
    if (message.text().includes('Content Security Policy')) pageErrors.push(`${page.url()}: ${message.text()}`);
  });
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol === 'data:') return;
    if (url.origin !== gateway.url || !DASHBOARD_REQUESTS.test(url.pathname)) requestsElsewhere.push(`${request.method()} ${request.url()}`);
  });
  return page;
}

async function signIn(route: string, viewport = DESKTOP): Promise<Page> {
  const page = await openPage(viewport);
  await page.goto(route);
  await page.getByLabel('Admin token').fill(gateway.adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Dashboard sections' }).waitFor();
  return page;
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Waits until the locator's text satisfies `accept`, and returns it. */
async function textWhen(locator: Locator, accept: (text: string) => boolean, what: string): Promise<string> {
  let text = '';
  await eventually(
    async () => {
      text = (await locator.textContent().catch(() => null)) ?? '';
      return accept(text);
    },
    10_000,
    `${what} (last seen: ${JSON.stringify(text)})`,
  );
  return text;
}

const statValue = (page: Page, label: string) => page.getByTestId(`stat-${label}`).locator('.stat-value');

/** The ids of the approvals listed on the page, top to bottom. */
function approvalIds(page: Page): Promise<string[]> {
  return page.locator('[data-testid="approvals"] [data-approval-id]').evaluateAll((items) => items.map((item) => item.getAttribute('data-approval-id') ?? ''));
}

/** The ids of the audit rows on the page, top to bottom. */
function entryIds(page: Page): Promise<string[]> {
  return page.locator('[data-testid="audit-entries"] tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-entry-id') ?? ''));
}

/** Readable at this width: each section, once loaded, is no wider than the screen (wide tables scroll inside their box). */
async function expectEverySectionFits(page: Page, width: number): Promise<void> {
  for (const [section, heading] of [['Agents', 'Agents'], ['Audit', 'Audit trail'], ['Policies', 'Policies'], ['Approvals', 'Approvals'], ['Sidecars', 'Sidecars'], ['Credentials', 'Upstream credentials']]) {
    await page.getByRole('navigation', { name: 'Dashboard sections' }).getByRole('link', { name: section }).click();
    await page.getByRole('heading', { name: heading, exact: true }).waitFor();
    await page.locator('main [role="status"]', { hasText: 'Loading' }).first().waitFor({ state: 'detached' });
    expect({ section, width: await page.evaluate<number>('document.documentElement.scrollWidth') }).toEqual({ section, width });
  }
}

interface Overview {
  totalRequests: number;
  enforcementRate: number;
  activeAgents: number;
  avgLatencyMs: number;
}

describe('the dashboard at /dashboard', () => {
  it('is served by the gateway: its client routes get the page, under a content security policy', async () => {
    const redirect = await fetch(`${gateway.url}/dashboard`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/dashboard/');
    const index = await fetch(`${gateway.url}/dashboard/`);
    const html = await index.text();
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toContain('text/html');
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(index.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(index.headers.get('x-content-type-options')).toBe('nosniff');
    expect(index.headers.get('cache-control')).toBe('no-cache');

    const route = await fetch(`${gateway.url}/dashboard/agents/${gateway.agents.invoiceBot.id}`);
    expect(route.status).toBe(200);
    expect(await route.text()).toBe(html);
    expect(route.headers.get('content-security-policy')).toBe(index.headers.get('content-security-policy'));

    const script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)![1];
    const asset = await fetch(`${gateway.url}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('javascript');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    await asset.arrayBuffer();
    const missing = await fetch(`${gateway.url}/dashboard/assets/missing.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: 'not_found' });
    // The lean routes and the APIs are where they were.
    expect((await fetch(`${gateway.url}/dashboards`)).status).toBe(404);
    expect((await gateway.admin('GET', '/admin/agents')).status).toBe(200);
  });

  it('signs in with the admin token, by keyboard too, and shows the numbers the analytics API returns', async () => {
    const page = await openPage();
    await page.goto('/dashboard/');
    await page.getByLabel('Admin token').fill('adm_not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await textWhen(page.getByRole('alert'), (text) => text.includes('The gateway refused this admin token (401)'), 'the refusal of a wrong token');

    await page.reload();
    await page.getByLabel('Admin token').waitFor();
    expect(await page.evaluate<string | undefined>('document.activeElement?.id')).toBe('admin-token');
    await page.keyboard.type(gateway.adminToken);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Overview · last 24h' }).waitFor();
    expect(await page.evaluate<string | null>("sessionStorage.getItem('agentgov.adminToken')")).toBe(gateway.adminToken);

    const day = (await gateway.admin<Overview>('GET', '/admin/analytics/overview?period=24h')).body;
    expect(day.totalRequests).toBeGreaterThan(20);
    await textWhen(statValue(page, 'Requests'), (text) => text === integer.format(day.totalRequests), 'the requests card');
    expect(await statValue(page, 'Enforcement rate').textContent()).toBe(`${decimal.format(day.enforcementRate)}%`);
    expect(await statValue(page, 'Active agents').textContent()).toBe(integer.format(day.activeAgents));
    expect(await statValue(page, 'Avg latency').textContent()).toBe(`${decimal.format(day.avgLatencyMs)} ms`);

    const agents = (await gateway.admin<{ agents: Array<{ name: string; requests: number }> }>('GET', '/admin/analytics/agents?period=24h&limit=100')).body.agents;
    const invoiceBot = agents.find((agent) => agent.name === 'invoice-bot')!;
    const invoiceRow = page.getByTestId('top-agents').locator('tr', { hasText: 'invoice-bot' });
    expect(await invoiceRow.locator('td[data-column="requests"]').textContent()).toBe(integer.format(invoiceBot.requests));
    for (const chart of ['traffic-chart', 'latency-heatmap', 'trust-distribution']) await page.getByTestId(chart).locator('canvas').first().waitFor();
    await screenshot(page, 'overview');
    // Sorting by a header, from the keyboard: the fewest requests first.
    await page.getByTestId('top-agents').getByRole('button', { name: /Requests/ }).focus();
    await page.keyboard.press('Enter');
    const fewest = Math.min(...agents.map((agent) => agent.requests));
    expect(await page.getByTestId('top-agents').locator('tbody tr').first().locator('td[data-column="requests"]').textContent()).toBe(integer.format(fewest));
    expect(await page.getByTestId('delegation-pairs').textContent()).toContain('invoice-bot');

    await page.getByText('7d', { exact: true }).click();
    await page.getByRole('heading', { name: 'Overview · last 7d' }).waitFor();
    const week = (await gateway.admin<Overview>('GET', '/admin/analytics/overview?period=7d')).body;
    await textWhen(statValue(page, 'Requests'), (text) => text === integer.format(week.totalRequests), 'the requests card of 7d');

    // The sections from the keyboard alone: from the top of the page, Tab to "Audit", Enter, and the page is there.
    await page.reload();
    await page.getByRole('heading', { name: 'Overview · last 7d' }).waitFor();
    for (let presses = 0; presses < 10; presses++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate<string | undefined>('document.activeElement?.textContent')) === 'Audit') break;
    }
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/audit');
    await expectEverySectionFits(page, DESKTOP.width);

    const phone = await signIn('/dashboard/', PHONE);
    await textWhen(statValue(phone, 'Requests'), (text) => text !== '', 'the requests card on a phone');
    await phone.getByTestId('traffic-chart').locator('canvas').first().waitFor();
    // Readable on a phone: nothing wider than the screen but the tables, which scroll inside their box.
    expect(await phone.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
    const sectionLinks = phone.getByRole('navigation', { name: 'Dashboard sections' }).getByRole('link');
    for (const link of await sectionLinks.all()) {
      const box = (await link.boundingBox())!;
      expect({ link: await link.textContent(), inSight: box.x >= 0 && box.x + box.width <= PHONE.width }).toEqual({ link: await link.textContent(), inSight: true });
    }
    await screenshot(phone, 'overview-phone');
    await expectEverySectionFits(phone, PHONE.width);
  });

  it('creates an agent, shows its token once with a copy button, changes its tier and revokes it', async () => {
    const page = await signIn('/dashboard/agents');
    await page.getByLabel('Name', { exact: true }).fill('browser-bot');
    await page.getByLabel('Trust tier', { exact: true }).selectOption('trusted');
    await page.getByLabel('Tags (comma-separated)').fill('qa, browser');
    await page.getByRole('button', { name: 'Create agent' }).click();

    const token = await page.getByLabel('Agent token').inputValue();
    await page.getByRole('button', { name: 'Copy token' }).click();
    await textWhen(page.getByTestId('token-once'), (text) => text.includes('Copied to the clipboard.'), 'the copy outcome');
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(token);
    const listed = (await gateway.admin<{ agents: Array<{ id: string; name: string; trustTier: string; tags: string[]; status: string }> }>('GET', '/admin/agents')).body.agents;
    const created = listed.find((agent) => agent.name === 'browser-bot')!;
    expect(created).toMatchObject({ trustTier: 'trusted', tags: ['qa', 'browser'], status: 'active' });
    expect((await gateway.proxy({ id: created.id, name: created.name, token }, 'GET', '/orders/1')).status).toBe(200);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.getByTestId('token-once').count()).toBe(0);

    await page.getByLabel('Trust tier of browser-bot', { exact: true }).selectOption('verified');
    await page.getByRole('button', { name: 'Save the trust tier of browser-bot' }).click();
    await textWhen(page.getByRole('status').filter({ hasText: 'browser-bot is now' }), (text) => text.includes('browser-bot is now verified'), 'the tier change');
    expect((await gateway.admin(`GET`, `/admin/agents/${created.id}`)).body).toMatchObject({ trustTier: 'verified' });
    await screenshot(page, 'agents');

    await page.getByRole('button', { name: 'Revoke browser-bot' }).click();
    await page.getByRole('button', { name: 'Yes, revoke browser-bot' }).click();
    await textWhen(page.getByRole('status').filter({ hasText: 'revoked' }), (text) => text.includes('browser-bot is revoked'), 'the revocation');
    expect((await gateway.admin(`GET`, `/admin/agents/${created.id}`)).body).toMatchObject({ status: 'revoked' });
    expect((await gateway.proxy({ id: created.id, name: created.name, token }, 'GET', '/orders/1')).status).toBe(401);
    // Revoked agents leave the list unless asked for.
    await eventually(async () => (await page.getByTestId('agents').locator('tr', { hasText: 'browser-bot' }).count()) === 0, 10_000, 'browser-bot leaving the list');
    await page.getByLabel('Show revoked agents').check();
    await textWhen(page.getByTestId('agents').locator('tr', { hasText: 'browser-bot' }).locator('td[data-column="status"]'), (text) => text === 'revoked', 'browser-bot among the revoked');

    await page.getByTestId('agents').getByRole('link', { name: 'invoice-bot' }).click();
    const trust = (await gateway.admin<{ score: number; factors: { denyRatio: { denied: number; decisions: number } } }>('GET', `/api/v1/trust/${gateway.agents.invoiceBot.id}`)).body;
    await textWhen(page.getByTestId('trust-score').locator('.score-value'), (text) => text === String(trust.score), 'the trust score');
    expect(await page.locator('table.factors').textContent()).toContain(`${trust.factors.denyRatio.denied} of ${trust.factors.denyRatio.decisions} decisions`);
    await screenshot(page, 'agent');
  });

  it('filters the audit log, verifies the chain, pages with the cursor and shows one entry', async () => {
    const page = await signIn('/dashboard/audit');
    const { invoiceBot } = gateway.agents;
    await page.getByLabel('Decision').selectOption('deny');
    await page.getByLabel('Agent', { exact: true }).selectOption(invoiceBot.id);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const denied = (await gateway.admin<{ entries: Array<{ id: string; decision: string }> }>('GET', `/admin/audit?decision=deny&agentId=${invoiceBot.id}&limit=50`)).body.entries;
    expect(denied.length).toBeGreaterThanOrEqual(2);
    await eventually(async () => JSON.stringify(await entryIds(page)) === JSON.stringify(denied.map((entry) => entry.id)), 10_000, 'the filtered entries');
    expect(new URL(page.url()).searchParams.get('decision')).toBe('deny');
    await page.getByRole('button', { name: 'Verify the chain' }).click();
    const verification = (await gateway.admin<{ ok: boolean; checked: number }>('GET', '/admin/audit/verify')).body;
    expect(verification.ok).toBe(true);
    await textWhen(page.getByTestId('chain-result'), (text) => text.includes(`Intact: ${verification.checked} entries checked`), 'the chain verification');
    await screenshot(page, 'audit');

    await page.getByRole('link', { name: 'Clear' }).click();
    await page.getByLabel('Per page').selectOption('10');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const first = (await gateway.admin<{ entries: Array<{ id: string }>; nextCursor: string }>('GET', '/admin/audit?limit=10')).body;
    const second = (await gateway.admin<{ entries: Array<{ id: string }> }>('GET', `/admin/audit?limit=10&cursor=${encodeURIComponent(first.nextCursor)}`)).body;
    await eventually(async () => JSON.stringify(await entryIds(page)) === JSON.stringify(first.entries.map((entry) => entry.id)), 10_000, 'the first page');
    await page.getByRole('button', { name: 'Older →' }).click();
    await eventually(async () => JSON.stringify(await entryIds(page)) === JSON.stringify(second.entries.map((entry) => entry.id)), 10_000, 'the second page');
    await page.getByRole('button', { name: '← Newer' }).click();
    await eventually(async () => JSON.stringify(await entryIds(page)) === JSON.stringify(first.entries.map((entry) => entry.id)), 10_000, 'the first page again');

    const [newest] = (await gateway.admin<{ entries: Array<{ seq: number; action: string; id: string }> }>('GET', '/admin/audit?limit=1')).body.entries;
    await page.getByRole('button', { name: `Details of entry ${newest.seq}` }).click();
    const detail = page.getByTestId('entry-detail');
    expect(await detail.textContent()).toContain(newest.id);
    expect(await detail.textContent()).toContain(newest.action);
    await page.keyboard.press('Escape');
    await detail.waitFor({ state: 'detached' });

    // An API error is a message naming the route and the problem, not a blank page.
    await page.getByLabel('From (local time)').fill('2026-11-20T10:00');
    await page.getByLabel('To (local time)').fill('2026-11-19T10:00');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await textWhen(page.getByRole('alert'), (text) => text.includes('GET /admin/audit answered 400'), 'the error of a bad period');
  });

  it('validates a draft, simulates an input with the trace of rules, backtests a draft and shows a policy with its versions', async () => {
    const page = await signIn('/dashboard/policies');
    const inForce = (await gateway.admin<{ policies: Array<{ name: string }> }>('GET', '/admin/policies')).body.policies.map((policy) => policy.name);
    await eventually(async () => (await page.getByTestId('policies').locator('tbody tr').count()) === inForce.length, 10_000, 'the policies table');
    expect(await page.getByTestId('policies').textContent()).toContain('no-orders');

    await page.getByRole('button', { name: 'Validate the draft' }).click();
    await textWhen(page.getByTestId('validation-result'), (text) => text.includes('Valid: orders-need-trust.'), 'the validation of the example draft');
    const broken = 'name: broken\nrules:\n  - condition: agent.trust_tier = trusted\n    action: deny\n    reason: x\n';
    await page.getByLabel('Draft', { exact: true }).fill(broken);
    await page.getByRole('button', { name: 'Validate the draft' }).click();
    const validation = (await gateway.admin<{ errors: Array<{ line: number; column: number }> }>('POST', '/admin/policies/validate', broken, { 'content-type': 'application/yaml' })).body;
    const [error] = validation.errors;
    await textWhen(page.getByTestId('validation-result'), (text) => text.includes(`line ${error.line}, column ${error.column}`), 'the validation error');

    const { invoiceBot } = gateway.agents;
    await page.getByLabel('Agent', { exact: true }).selectOption(invoiceBot.id);
    await page.getByLabel('Action', { exact: true }).fill('write:orders');
    await page.getByRole('button', { name: 'Simulate', exact: true }).click();
    const simulated = (await gateway.admin<{ decision: string; policy: string; rule: string; reason: string }>('POST', '/admin/policies/simulate', { input: { agentId: invoiceBot.id, action: 'write:orders' } })).body;
    expect(simulated).toMatchObject({ decision: 'deny', policy: 'no-orders', rule: 'untrusted-orders' });
    const result = page.getByTestId('simulation-result');
    await textWhen(result, (text) => text.includes(`${simulated.policy} · ${simulated.rule}: ${simulated.reason}`), 'the simulated decision');
    expect(await page.getByTestId('simulation-trace').locator('tr.fired').textContent()).toContain('untrusted-orders');
    await screenshot(page, 'policies');

    const draft = 'name: no-order-reads\nmatch: { action: "read:orders*" }\nrules:\n  - condition: agent.trust_tier < trusted\n    action: deny\n    reason: Order reads need a trusted agent\n';
    await page.getByLabel('Draft', { exact: true }).fill(draft);
    await page.getByRole('button', { name: 'Backtest over the last 24h' }).click();
    await page.getByTestId('backtest-result').waitFor();
    const from = new Date(Date.now() - 86_400_000).toISOString();
    const backtest = (await gateway.admin<{ allowToDeny: number }>('POST', '/admin/policies/backtest', { policies: draft, from })).body;
    expect(backtest.allowToDeny).toBeGreaterThanOrEqual(6);
    await textWhen(page.getByTestId('backtest-result'), (text) => text.includes(`Allow → deny${integer.format(backtest.allowToDeny)}`), 'the backtest counts');

    await page.getByTestId('policies').getByRole('link', { name: 'no-orders' }).click();
    const detail = (await gateway.admin<{ source: string; version: number }>('GET', '/admin/policies/no-orders')).body;
    await textWhen(page.getByTestId('policy-source'), (text) => text === detail.source, 'the policy source');
    await page.getByRole('button', { name: `Show version ${detail.version}` }).click();
    expect(await page.locator('.version-source pre').textContent()).toBe(detail.source);
    await screenshot(page, 'policy');
  });

  it('shows a canary rollout with both cohorts’ rates, and aborts it', async () => {
    const version = 'name: no-orders\nmatch: { action: "write:orders*" }\nrules:\n  - name: unprivileged-orders\n    condition: agent.trust_tier < privileged\n    action: deny\n    reason: Orders need a privileged agent\n';
    const started = await gateway.admin<{ id: string }>('POST', '/admin/canaries', { policy: 'no-orders', source: version, share: 50, minDecisions: 1_000_000 });
    expect(started.status).toBe(201);
    const agents = Object.values(gateway.agents);
    for (const agent of agents) await gateway.proxy(agent, 'POST', '/orders', { item: 'pen' });
    const page = await signIn('/dashboard/policies');
    const row = page.getByTestId('canaries').locator('tbody tr').first();
    await textWhen(row, (text) => text.includes('running'), 'the running canary rollout');
    type Cohort = { decisions: number; denyRate: number };
    await eventually(async () => {
      await page.getByRole('navigation', { name: 'Dashboard sections' }).getByRole('link', { name: 'Policies' }).click();
      const shown = (await gateway.admin<{ canary: Cohort; stable: Cohort }>('GET', `/admin/canaries/${started.body.id}`)).body;
      if (shown.canary.decisions + shown.stable.decisions < agents.length) return false;
      const text = (await row.textContent()) ?? '';
      return text.includes(`${integer.format(shown.canary.decisions)} decisions · ${shown.canary.denyRate}% denied`) && text.includes(`${integer.format(shown.stable.decisions)} decisions · ${shown.stable.denyRate}% denied`);
    }, 20_000, 'both cohorts’ rates as the API gives them');
    await screenshot(page, 'canaries');
    await page.getByRole('button', { name: 'Abort the canary of no-orders' }).click();
    await textWhen(row, (text) => text.includes('aborted by hand'), 'the aborted rollout');
    expect((await gateway.admin<{ state: string }>('GET', `/admin/canaries/${started.body.id}`)).body.state).toBe('aborted');
  });

  it('shows the sidecar fleet with its bundle age and audit gaps', async () => {
    const page = await signIn('/dashboard/sidecars');
    const [sidecar] = (await gateway.admin<{ sidecars: Array<{ id: string; received: number; gaps: unknown[] }> }>('GET', '/admin/sidecars')).body.sidecars;
    expect(sidecar).toMatchObject({ id: SIDECAR_ID, gaps: [] });
    const row = page.locator(`[data-sidecar-id="${SIDECAR_ID}"]`);
    await row.waitFor();
    expect(await row.locator('td').nth(2).textContent()).toMatch(/^\d+(\.\d+)? (s|min)$/);
    expect(await row.locator('td').nth(4).textContent()).toBe('complete');
    expect(await row.locator('td').nth(5).textContent()).toBe(integer.format(sidecar.received));
    await screenshot(page, 'sidecars');
  });

  it('approves a request held by a require_approval rule, whose retry then goes through once, and rejects another', async () => {
    const put = await gateway.admin('PUT', '/admin/policies/big-refunds', BIG_REFUNDS, { 'content-type': 'application/yaml' });
    // With its body, so a failure says why a gateway refuses the rule.
    expect(`${put.status} ${put.text}`).toMatch(/^201 /);
    const { invoiceBot, supportBot } = gateway.agents;
    const refund = (agent: SeededAgent, amount: number, approvalId?: string) =>
      call<{ error: string; approvalId: string }>(gateway.url, 'POST', '/proxy/refunds', {
        bearer: agent.token,
        body: { amount },
        headers: approvalId === undefined ? {} : { 'x-service-approval': approvalId },
      });
    const held = await refund(invoiceBot, 250);
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({ error: 'approval_required', approvalId: expect.any(String) });
    const toReject = await refund(invoiceBot, 480);
    expect(toReject.status).toBe(202);
    // A third one stays pending, for the picture of the Approvals page.
    const third = await refund(supportBot, 900);
    expect(third.status).toBe(202);
    const heldIds = [held, toReject, third].map((answer) => answer.body.approvalId);
    await eventually(async () => {
      const entries = (await gateway.admin<{ entries: Array<{ details: { approvalId?: string } | null }> }>('GET', '/admin/audit?action=write:refunds&limit=50')).body.entries;
      return heldIds.every((id) => entries.some((entry) => entry.details?.approvalId === id));
    }, 10_000, 'the held requests in the audit trail');

    const page = await signIn('/dashboard/approvals');
    const pending = (await gateway.admin<{ approvals: Array<{ id: string }> }>('GET', '/admin/approvals?status=pending')).body.approvals;
    expect(pending).toHaveLength(3);
    await eventually(async () => JSON.stringify(await approvalIds(page)) === JSON.stringify(pending.map((approval) => approval.id)), 10_000, 'the pending approvals');
    const item = page.locator(`[data-approval-id="${held.body.approvalId}"]`);
    expect(await item.textContent()).toContain('write:refunds');
    expect(await item.textContent()).toContain('big-refunds · over-100: Refunds over 100 need a person');
    // What is asked: each request's own arguments, from the audit entry that names its approval.
    await textWhen(item.getByTestId('approval-arguments'), (text) => text.includes('"amount": 250,'), 'the arguments of the request to approve');
    await textWhen(page.locator(`[data-approval-id="${toReject.body.approvalId}"]`).getByTestId('approval-arguments'), (text) => text.includes('"amount": 480,'), 'the arguments of the request to reject');
    await item.getByLabel('Comment (optional)').fill('ok by finance');
    await item.getByRole('button', { name: 'Approve write:refunds for invoice-bot' }).click();
    await textWhen(page.getByRole('status').filter({ hasText: held.body.approvalId }), (text) => text.includes('approved'), 'the approval');
    await item.waitFor({ state: 'detached' });
    const approved = (await gateway.admin<{ approvals: Array<Record<string, unknown>> }>('GET', '/admin/approvals?status=approved')).body.approvals;
    expect(approved).toContainEqual(expect.objectContaining({ id: held.body.approvalId, status: 'approved', comment: 'ok by finance' }));

    // What the approval is for: the agent's retry of that very request goes through, once.
    expect((await refund(invoiceBot, 250, held.body.approvalId)).status).toBe(200);
    expect((await refund(invoiceBot, 250, held.body.approvalId)).status).toBe(403);
    await page.getByLabel('used', { exact: true }).check();
    await textWhen(page.locator(`[data-approval-id="${held.body.approvalId}"]`), (text) => text.includes('ok by finance'), 'the used approval with its comment');

    await page.getByLabel('pending', { exact: true }).check();
    const rejected = page.locator(`[data-approval-id="${toReject.body.approvalId}"]`);
    await rejected.getByRole('button', { name: 'Reject write:refunds for invoice-bot' }).click();
    await textWhen(page.getByRole('status').filter({ hasText: toReject.body.approvalId }), (text) => text.includes('rejected'), 'the rejection');
    await rejected.waitFor({ state: 'detached' });
    expect((await gateway.admin<{ approvals: Array<{ id: string }> }>('GET', '/admin/approvals?status=rejected')).body.approvals.map((approval) => approval.id)).toEqual([toReject.body.approvalId]);
    expect((await refund(invoiceBot, 480, toReject.body.approvalId)).status).toBe(403);

    // Rejected is final: the list of rejected requests offers no decision.
    await page.getByLabel('rejected', { exact: true }).check();
    await page.locator(`[data-approval-id="${toReject.body.approvalId}"]`).waitFor();
    expect(await page.locator(`[data-approval-id="${toReject.body.approvalId}"]`).getByRole('button').count()).toBe(0);

    // Another admin was quicker: the page's decision is refused (409), and says so.
    const raced = await refund(invoiceBot, 640);
    await page.getByLabel('pending', { exact: true }).check();
    const stale = page.locator(`[data-approval-id="${raced.body.approvalId}"]`);
    await stale.waitFor();
    expect((await gateway.admin('POST', `/admin/approvals/${raced.body.approvalId}/reject`, { comment: 'no' })).status).toBe(200);
    await stale.getByRole('button', { name: 'Approve write:refunds for invoice-bot' }).click();
    await textWhen(stale.getByRole('alert'), (text) => text.includes('answered 409') && text.includes('only a pending approval can be decided'), 'the refusal of a decided approval');
  });

  it('pages through more pending approvals than one page holds, and filters them by agent', async () => {
    // big-refunds (the test above) holds refunds over 100: as many from one agent as it may have open (APPROVALS_MAX_PENDING_PER_AGENT, 20), one from another.
    const { opsAdmin, invoiceBot } = gateway.agents;
    const hold = async (agent: SeededAgent, amount: number) => {
      const answer = await gateway.proxy<{ approvalId: string }>(agent, 'POST', '/refunds', { amount });
      expect(answer.status).toBe(202);
      return answer.body.approvalId;
    };
    for (let amount = 101; amount <= 120; amount++) await hold(opsAdmin, amount);
    await hold(invoiceBot, 777);
    type Listed = { approvals: Array<{ id: string }>; nextCursor: string | null };
    const pending: string[] = [];
    let cursor: string | null = null;
    do {
      const listed: Listed = (await gateway.admin<Listed>('GET', `/admin/approvals?status=pending&limit=20${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`)).body;
      pending.push(...listed.approvals.map((approval) => approval.id));
      cursor = listed.nextCursor;
    } while (cursor !== null);
    expect(pending.length).toBeGreaterThan(20);

    const page = await signIn('/dashboard/approvals');
    await eventually(async () => JSON.stringify(await approvalIds(page)) === JSON.stringify(pending.slice(0, 20)), 10_000, 'the first page of pending approvals');
    await page.getByRole('button', { name: 'Older →' }).click();
    await eventually(async () => JSON.stringify(await approvalIds(page)) === JSON.stringify(pending.slice(20, 40)), 10_000, 'the second page');
    expect(await page.getByTestId('approvals-page').textContent()).toContain('Page 2');
    await page.getByRole('button', { name: '← Newer' }).click();
    await eventually(async () => JSON.stringify(await approvalIds(page)) === JSON.stringify(pending.slice(0, 20)), 10_000, 'the first page again');

    const ofInvoiceBot = (await gateway.admin<Listed>('GET', `/admin/approvals?status=pending&agentId=${invoiceBot.id}`)).body.approvals.map((approval) => approval.id);
    expect(ofInvoiceBot).toHaveLength(1);
    await page.getByLabel('Agent').selectOption(invoiceBot.id);
    await eventually(async () => JSON.stringify(await approvalIds(page)) === JSON.stringify(ofInvoiceBot), 10_000, 'the one pending approval of invoice-bot');
    expect(await page.getByTestId('approvals-page').textContent()).toContain('Page 1');
  });

  it('shows an MCP tool held by its pin with the diff, and accepts it', async () => {
    const page = await signIn('/dashboard/approvals');
    const tool = page.locator('[data-tool="files/read_file"]');
    await tool.waitFor();
    expect(await tool.locator('pre.added').textContent()).toBe(READ_FILE_CHANGED);
    expect(await tool.locator('pre.removed').textContent()).toBe('Reads a file');
    await screenshot(page, 'approvals');

    await tool.getByRole('button', { name: 'Accept the new definition of files/read_file' }).click();
    await textWhen(page.getByRole('status').filter({ hasText: 'files/read_file' }), (text) => text.includes('the new definition is pinned'), 'the acceptance');
    expect((await gateway.admin('GET', '/admin/mcp/tools?held=true')).body).toEqual({ tools: [] });
    const pins = (await gateway.admin<{ tools: Array<{ tool: string; pinned: { description: string } }> }>('GET', '/admin/mcp/tools')).body.tools;
    expect(pins).toContainEqual(expect.objectContaining({ tool: 'read_file', pinned: expect.objectContaining({ description: READ_FILE_CHANGED }) }));
  });
  it('shows one session of an agent as a timeline of its calls with their labels, and clears its labels', async () => {
    const policy = 'name: taint\nrules:\n  - name: customers\n    condition: action starts_with "read:docs/"\n    action: label\n    labels: [private_data]\n    reason: Internal documents were read\n  - name: web\n    condition: action starts_with "read:web/"\n    action: label\n    labels: [untrusted_content]\n    scope: agent\n    ttl: 1h\n    reason: An untrusted page was read\n';
    expect((await gateway.admin('PUT', '/admin/policies/taint', policy, { 'content-type': 'application/yaml' })).status).toBeLessThan(300);
    const { supportBot } = gateway.agents;
    const inSession = (route: string) => call(gateway.url, 'GET', `/proxy${route}`, { bearer: supportBot.token, headers: { 'x-service-session': 'chat-7' } });
    await inSession('/docs/guide');
    await inSession('/web/page');
    await inSession('/orders/12');
    const ask = () => gateway.admin<{ calls: Array<{ action: string; decision: string; labelsAdded: string[] }>; labels: string[]; agentLabels: string[] }>('GET', `/admin/sessions/timeline?agentId=${supportBot.id}&sessionId=chat-7`);
    await eventually(async () => (await ask()).body.calls.length === 3, 10_000, 'the session in the trail');
    const timeline = (await ask()).body;
    expect(timeline).toMatchObject({ labels: ['private_data'], agentLabels: ['untrusted_content'] });

    const page = await signIn(`/dashboard/agents/${supportBot.id}`);
    await page.getByLabel('Session id').fill('chat-7');
    await page.getByRole('button', { name: 'Show timeline' }).click();
    const rows = page.getByTestId('session-timeline').locator('tbody tr');
    await eventually(async () => (await rows.count()) === timeline.calls.length, 10_000, 'the timeline rows');
    expect(await rows.locator('td[data-column="action"] code').allTextContents()).toEqual(timeline.calls.map((each) => each.action));
    expect(await rows.locator('td[data-column="labels-added"]').allTextContents()).toEqual(timeline.calls.map((each) => each.labelsAdded.join(', ') || '—'));
    expect(await page.getByTestId('session-labels').textContent()).toBe(timeline.labels.join(', '));
    expect(await page.getByTestId('agent-labels').textContent()).toBe(timeline.agentLabels.join(', '));
    await screenshot(page, 'session');

    await page.getByRole('button', { name: 'Clear session labels' }).click();
    await textWhen(page.getByTestId('session-labels'), (text) => text === '—', 'the session labels ended');
    await page.getByRole('button', { name: 'Clear agent labels' }).click();
    await textWhen(page.getByTestId('agent-labels'), (text) => text === '—', 'the agent labels ended');
    expect((await ask()).body).toMatchObject({ labels: [], agentLabels: [] });
    const clears = async () => (await gateway.admin<{ entries: Array<{ details: { scope: string } }> }>('GET', `/admin/audit?action=admin:session&agentId=${supportBot.id}`)).body.entries.map((entry) => entry.details.scope).sort();
    await eventually(async () => (await clears()).length === 2, 10_000, 'both clears in the audit trail');
    expect(await clears()).toEqual(['agent', 'session']);
    expect((await gateway.admin('DELETE', '/admin/policies/taint')).status).toBeLessThan(300);
  });

  it('stores, rotates and revokes an upstream credential, never showing or receiving its secret', async () => {
    const first = `sk_dashboard_${Date.now()}_first`;
    const second = `sk_dashboard_${Date.now()}_second`;
    const page = await signIn('/dashboard/credentials');
    const answers: string[] = [];
    page.on('response', (response) => void response.text().then((text) => answers.push(text), () => undefined));
    const agent = gateway.agents.supportBot;
    const injected = async () => ((await gateway.proxy<{ headers: Record<string, string> }>(agent, 'GET', '/payments/invoices')).body.headers ?? {})['x-api-key'];

    await page.getByLabel('Route').fill('/proxy/payments');
    await page.getByLabel('Goes in').selectOption('header');
    await page.getByLabel('Header name').fill('X-Api-Key');
    const secretField = page.getByLabel('Secret', { exact: true });
    expect(await secretField.getAttribute('type')).toBe('password');
    await secretField.fill(first);
    await page.getByRole('button', { name: 'Store credential' }).click();
    await textWhen(page.getByRole('status').filter({ hasText: 'stored for' }), (text) => text.includes('stored for /proxy/payments'), 'the stored notice');
    expect(await secretField.inputValue()).toBe('');
    const listed = (await gateway.admin<{ credentials: Array<{ id: string; version: number }> }>('GET', '/admin/credentials')).body.credentials;
    expect(listed).toHaveLength(1);
    const id = listed[0].id;
    const row = page.getByTestId('credentials').locator('tr', { hasText: id });
    await textWhen(row.locator('td[data-column="placement"]'), (text) => text === 'header X-Api-Key', 'the placement');
    expect(await row.locator('td[data-column="version"]').textContent()).toBe('1');
    expect(await injected()).toBe(first);

    // A route that does not exist is the gateway's 400, shown with its message.
    await page.getByLabel('Route').fill('/elsewhere');
    await page.getByLabel('Header name').fill('X-Api-Key');
    await secretField.fill('x');
    await page.getByRole('button', { name: 'Store credential' }).click();
    await textWhen(page.getByRole('alert'), (text) => text.includes('a route is `/proxy` or `/proxy/<prefix>`'), 'the refusal');

    await page.getByRole('button', { name: `Rotate ${id}` }).click();
    await page.getByLabel('New secret', { exact: true }).fill(second);
    await page.getByRole('form', { name: `New secret for ${id}` }).getByRole('button', { name: 'Rotate' }).click();
    await textWhen(page.getByRole('status').filter({ hasText: 'rotated' }), (text) => text.includes(`Credential ${id} rotated: version 2 is in force.`), 'the rotation');
    await textWhen(row.locator('td[data-column="version"]'), (text) => text === '2', 'version 2');
    expect(await injected()).toBe(second);
    await screenshot(page, 'credentials');

    await page.getByRole('button', { name: `Revoke ${id}` }).click();
    await page.getByRole('button', { name: 'Yes, revoke' }).click();
    await textWhen(row.locator('td[data-column="status"]'), (text) => text === 'revoked', 'the revocation');
    expect((await gateway.admin('GET', `/admin/credentials/${id}`)).body).toMatchObject({ revokedAt: expect.any(String) });
    expect(await injected()).toBeUndefined();

    const html = await page.content();
    for (const value of [first, second]) {
      expect(html.includes(value)).toBe(false);
      expect(answers.some((text) => text.includes(value))).toBe(false);
    }
    expect(answers.some((text) => text.includes(id))).toBe(true);
  });

  it('follows a git branch from the policies page, shows a refused commit, and stops following', async () => {
    const repo = path.join(gateway.gitRoot, 'policies');
    const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { env: { PATH: process.env.PATH ?? '', HOME: gateway.gitRoot, GIT_CONFIG_NOSYSTEM: '1' }, encoding: 'utf8' }).trim();
    const commit = (file: string, text: string, message: string) => {
      fs.writeFileSync(path.join(repo, file), text);
      git('add', '-A');
      git('commit', '--quiet', '-m', message);
      return git('rev-parse', 'HEAD');
    };
    fs.mkdirSync(repo);
    git('init', '--quiet', '--initial-branch=main');
    git('config', 'user.name', 'Policy Author');
    git('config', 'user.email', 'author@example.com');
    const good = commit('vault.yaml', 'policies:\n  - name: no-vault\n    match: { action: "read:vault*" }\n    rules:\n      - name: never\n        condition: "true"\n        action: deny\n        reason: The vault is not for agents\n', 'No vault reads');

    const page = await signIn('/dashboard/policies');
    const section = page.getByRole('region', { name: 'Git source' });
    await section.getByLabel('Repository URL').fill(repo);
    await section.getByLabel('Fetch every').fill('1s');
    await section.getByRole('button', { name: 'Follow branch' }).click();
    await textWhen(section.getByTestId('git-commit'), (text) => text === good.slice(0, 12), 'the commit in force');
    expect((await gateway.admin<{ commit: string }>('GET', '/admin/policy-git')).body.commit).toBe(good);
    const listed = (await gateway.admin<{ policies: Array<{ name: string; origin: string }> }>('GET', '/admin/policies')).body.policies;
    expect(listed).toContainEqual(expect.objectContaining({ name: 'no-vault', origin: 'git' }));

    // A commit that does not parse is refused and named; the good one stays in force.
    const bad = commit('vault.yaml', 'policies:\n  - name: no-vault\n    rules: [\n', 'Broken');
    await eventually(async () => (await gateway.admin<{ error: { commit: string } | null }>('GET', '/admin/policy-git')).body.error?.commit === bad, 20_000, 'the broken commit refused');
    await page.getByRole('navigation', { name: 'Dashboard sections' }).getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('navigation', { name: 'Dashboard sections' }).getByRole('link', { name: 'Policies' }).click();
    await textWhen(section.getByTestId('git-refusal'), (text) => text.includes(`Commit ${bad.slice(0, 12)} was refused`) && text.includes('The last good commit stays in force.'), 'the refusal');
    expect(await section.getByTestId('git-commit').textContent()).toBe(good.slice(0, 12));
    await screenshot(page, 'policy-git');

    await section.getByRole('button', { name: 'Stop following git' }).click();
    await section.getByRole('button', { name: 'Yes, stop following' }).click();
    await section.getByRole('button', { name: 'Follow branch' }).waitFor();
    expect((await gateway.admin('GET', '/admin/policy-git')).status).toBe(404);
    const after = (await gateway.admin<{ policies: Array<{ name: string; origin: string }> }>('GET', '/admin/policies')).body.policies;
    expect(after).toContainEqual(expect.objectContaining({ name: 'no-vault', origin: 'api' }));
  });
});
