import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { AppError } from '../src/core/common/app-error';
import { OrganizationsService } from '../src/gateway/organizations/organizations.service';
import { DataSource } from 'typeorm';
import { FakePaymentProvider } from './support/fake-payment-provider';
import { call, TestResponse } from './support/http-client';
import { SmtpSink } from './support/smtp-sink';
import { startUpstream, TestUpstream } from './support/upstream';
import { createOrganization, startGateway, TestGateway, TestOrganization, TEST_PUBLIC_URL } from './support/test-gateway';

/**
 * Billing (docs/billing.md: its API, the webhook, its errors) and the plan limits, on the
 * real Stripe SDK against a local fake of the provider's API and a real SMTP
 * server.
 */

const SECRET_KEY = `sk_test_${randomBytes(12).toString('hex')}`;
const WEBHOOK_SECRET = `whsec_${randomBytes(16).toString('hex')}`;
const PRICES = {
  PAYMENT_PRICE_STARTER_MONTHLY: 'price_e2e_starter_month',
  PAYMENT_PRICE_STARTER_ANNUAL: 'price_e2e_starter_year',
  PAYMENT_PRICE_PROFESSIONAL_MONTHLY: 'price_e2e_pro_month',
  PAYMENT_PRICE_PROFESSIONAL_ANNUAL: 'price_e2e_pro_year',
};

interface OrganizationBody {
  id: string;
  plan: string;
  limits: Record<string, number>;
  billingEmail: string | null;
  customerId: string | null;
}

let provider: FakePaymentProvider;
let smtp: SmtpSink;
let upstream: TestUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  [provider, smtp, upstream] = await Promise.all([FakePaymentProvider.start(SECRET_KEY), SmtpSink.start(), startUpstream()]);
  gateway = await startGateway({
    ...PRICES,
    PAYMENT_SECRET_KEY: SECRET_KEY,
    PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
    PAYMENT_API_URL: provider.url,
    ALERT_SMTP_HOST: '127.0.0.1',
    ALERT_SMTP_PORT: String(smtp.port),
    ALERT_EMAIL_FROM: 'billing@gateway.test',
    UPSTREAM_URL: upstream.url,
  });
});

afterAll(async () => {
  await gateway?.close();
  await Promise.all([provider?.close(), smtp?.close(), upstream?.close()]);
});

function uniqueEmail(label: string): string {
  return `${label}-${randomBytes(6).toString('hex')}@example.com`;
}

function id(prefix: string): string {
  return `${prefix}_${randomBytes(10).toString('hex')}`;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Posts an event signed the way the provider signs it (the SDK's test header helper). */
async function deliver(event: object, options: { secret?: string; timestamp?: number; body?: string } = {}): Promise<TestResponse> {
  const payload = options.body ?? JSON.stringify(event);
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? WEBHOOK_SECRET, timestamp: options.timestamp });
  return call(gateway.url, 'POST', '/billing/webhook', { body: payload, headers: { 'content-type': 'application/json', 'provider-signature': signature } });
}

function checkoutCompleted(fields: { customer: string | null; email: string | null; subscription: string; plan: string; created?: number; eventId?: string }) {
  return {
    id: fields.eventId ?? id('evt'),
    object: 'event',
    type: 'checkout.session.completed',
    created: fields.created ?? nowSeconds(),
    data: {
      object: {
        id: id('cs_test'),
        object: 'checkout.session',
        customer: fields.customer,
        customer_email: fields.email,
        subscription: fields.subscription,
        metadata: { plan: fields.plan },
      },
    },
  };
}

function subscriptionEvent(
  type: 'customer.subscription.updated' | 'customer.subscription.deleted',
  fields: { subscription: string; customer: string; status: string; price?: string; interval?: string; created: number; eventId?: string },
) {
  const items = fields.price === undefined ? [] : [{ id: id('si'), price: { id: fields.price, recurring: { interval: fields.interval ?? 'month' } } }];
  return {
    id: fields.eventId ?? id('evt'),
    object: 'event',
    type,
    created: fields.created,
    data: { object: { id: fields.subscription, object: 'subscription', customer: fields.customer, status: fields.status, items: { object: 'list', data: items } } },
  };
}

async function organization(adminToken: string): Promise<OrganizationBody> {
  const response = await call<OrganizationBody>(gateway.url, 'GET', '/admin/organization', { adminToken });
  expect(response.status).toBe(200);
  return response.body;
}

/** The organization's billing audit entries, newest first, once there are at least `count`. */
async function billingAudit(adminToken: string, count: number): Promise<Array<{ action: string; reason: string | null; details: Record<string, unknown> }>> {
  type Entries = { entries: Array<{ action: string; reason: string | null; details: Record<string, unknown> }> };
  const read = async () => {
    const response = await call<Entries>(gateway.url, 'GET', '/admin/audit?action=admin:billing.', { adminToken });
    expect(response.status).toBe(200);
    return response.body.entries;
  };
  // Admin entries are written by the audit writer shortly after the change.
  const deadline = Date.now() + 10_000;
  while ((await read()).length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const entries = await read();
  expect(entries).toHaveLength(count);
  return entries;
}

/** An organization with a billing email and a linked customer, on `plan` through a checkout. */
async function subscribedOrganization(plan: 'starter' | 'professional', created = nowSeconds() - 1000): Promise<TestOrganization & { customer: string; subscription: string }> {
  const email = uniqueEmail('subscribed');
  const { organization: org, adminToken } = await gateway.app.get(OrganizationsService).create({ name: 'Subscribed', billingEmail: email });
  const customer = provider.addCustomer(email);
  const subscription = id('sub');
  expect((await deliver(checkoutCompleted({ customer, email, subscription, plan, created }))).status).toBe(200);
  return { id: org.id, adminToken, customer, subscription };
}

describe('GET /billing/plans', () => {
  it('lists the four plans in order with the limits of docs/billing.md, prices in cents, provider prices and features', async () => {
    const response = await call<{ plans: Array<Record<string, unknown>> }>(gateway.url, 'GET', '/billing/plans');
    expect(response.status).toBe(200);
    const plans = response.body.plans;
    expect(plans.map((plan) => plan.id)).toEqual(['free', 'starter', 'professional', 'enterprise']);
    expect(plans.map((plan) => plan.limits)).toEqual([
      { agents: 2, policyChecksPerMonth: 1000, policies: 3, auditRetentionDays: 7, teamMembers: 1 },
      { agents: 10, policyChecksPerMonth: 25000, policies: 25, auditRetentionDays: 30, teamMembers: 5 },
      { agents: 50, policyChecksPerMonth: 250000, policies: -1, auditRetentionDays: 90, teamMembers: 25 },
      { agents: -1, policyChecksPerMonth: -1, policies: -1, auditRetentionDays: -1, teamMembers: -1 },
    ]);
    expect(plans.map((plan) => plan.pricing)).toEqual([
      { monthly: 0, annual: 0, currency: 'usd' },
      { monthly: 2900, annual: 27800, currency: 'usd' },
      { monthly: 9900, annual: 95000, currency: 'usd' },
      null,
    ]);
    expect(plans.map((plan) => plan.providerPrices)).toEqual([
      undefined,
      { monthly: PRICES.PAYMENT_PRICE_STARTER_MONTHLY, annual: PRICES.PAYMENT_PRICE_STARTER_ANNUAL },
      { monthly: PRICES.PAYMENT_PRICE_PROFESSIONAL_MONTHLY, annual: PRICES.PAYMENT_PRICE_PROFESSIONAL_ANNUAL },
      undefined,
    ]);
    for (const plan of plans) {
      expect(typeof plan.name).toBe('string');
      expect(typeof plan.description).toBe('string');
      expect(Array.isArray(plan.features) && plan.features.length > 0 && plan.features.every((feature) => typeof feature === 'string')).toBe(true);
    }
  });
});

describe('POST /billing/checkout', () => {
  it('answers 400 naming the field for a missing or invalid email, plan or interval', async () => {
    const valid = { email: 'ada@example.com', plan: 'starter', interval: 'month' };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ plan: 'starter', interval: 'month' }, 'email'],
      [{ ...valid, email: 'not-an-email' }, 'email'],
      [{ ...valid, email: 42 }, 'email'],
      [{ email: valid.email, interval: 'month' }, 'plan'],
      [{ ...valid, plan: 'free' }, 'plan'],
      [{ ...valid, plan: 'enterprise' }, 'plan'],
      [{ email: valid.email, plan: 'starter' }, 'interval'],
      [{ ...valid, interval: 'week' }, 'interval'],
    ];
    const before = provider.requests.length;
    for (const [body, field] of cases) {
      const response = await call(gateway.url, 'POST', '/billing/checkout', { body });
      expect({ body, status: response.status, error: response.body.error }).toEqual({ body, status: 400, error: 'invalid_request' });
      expect(response.body.message).toContain(field);
    }
    expect(provider.requests.length).toBe(before);
  });

  it('creates the customer, then a subscription checkout with the plan price, URLs on PUBLIC_URL and the plan in metadata', async () => {
    const email = uniqueEmail('checkout');
    const response = await call<{ checkoutUrl: string; sessionId: string }>(gateway.url, 'POST', '/billing/checkout', { body: { email, plan: 'professional', interval: 'year' } });
    expect(response.status).toBe(200);
    expect(response.body.sessionId).toMatch(/^cs_test_/);
    expect(response.body.checkoutUrl).toBe(`https://checkout.fake-provider.test/c/pay/${response.body.sessionId}`);

    const created = provider.requestsTo('POST', '/v1/customers').filter((request) => request.form.email === email);
    expect(created).toHaveLength(1);
    const customer = [...provider.customers.values()].find((candidate) => candidate.email === email)!;
    const session = provider.requestsTo('POST', '/v1/checkout/sessions').at(-1)!;
    expect(session.authorization).toBe(`Bearer ${SECRET_KEY}`);
    expect(session.form).toMatchObject({
      mode: 'subscription',
      customer: customer.id,
      'line_items[0][price]': PRICES.PAYMENT_PRICE_PROFESSIONAL_ANNUAL,
      'line_items[0][quantity]': '1',
      'metadata[plan]': 'professional',
    });
    expect(session.form.success_url.startsWith(`${TEST_PUBLIC_URL}/`)).toBe(true);
    expect(session.form.success_url).toContain('{CHECKOUT_SESSION_ID}');
    expect(session.form.cancel_url.startsWith(`${TEST_PUBLIC_URL}/`)).toBe(true);
  });

  it('takes the plans’ own words for the interval: monthly and annual', async () => {
    for (const [interval, price] of [
      ['monthly', PRICES.PAYMENT_PRICE_STARTER_MONTHLY],
      ['annual', PRICES.PAYMENT_PRICE_STARTER_ANNUAL],
    ]) {
      const response = await call(gateway.url, 'POST', '/billing/checkout', { body: { email: uniqueEmail(interval), plan: 'starter', interval } });
      expect(response.status).toBe(200);
      expect(provider.requestsTo('POST', '/v1/checkout/sessions').at(-1)!.form['line_items[0][price]']).toBe(price);
    }
  });

  it('finds the existing customer by email instead of creating another', async () => {
    const email = uniqueEmail('returning');
    const existing = provider.addCustomer(email);
    const response = await call(gateway.url, 'POST', '/billing/checkout', { body: { email, plan: 'starter', interval: 'month' } });
    expect(response.status).toBe(200);
    expect(provider.requestsTo('POST', '/v1/customers').filter((request) => request.form.email === email)).toHaveLength(0);
    const session = provider.requestsTo('POST', '/v1/checkout/sessions').at(-1)!;
    expect(session.form).toMatchObject({ customer: existing, 'line_items[0][price]': PRICES.PAYMENT_PRICE_STARTER_MONTHLY, 'metadata[plan]': 'starter' });
    expect(provider.requestsTo('GET', '/v1/customers').at(-1)!.query).toMatchObject({ email });
  });

  it('uses the customer of the organization with that billing email, in any case', async () => {
    const email = uniqueEmail('linked');
    await gateway.app.get(OrganizationsService).create({ name: 'Linked', billingEmail: email });
    const customer = provider.addCustomer(email);
    expect((await deliver(checkoutCompleted({ customer, email, subscription: id('sub'), plan: 'starter' }))).status).toBe(200);
    // The provider's search by email is case-sensitive: another spelling made a second customer,
    // and its checkout a second organization for the same team.
    const response = await call(gateway.url, 'POST', '/billing/checkout', { body: { email: email.toUpperCase(), plan: 'professional', interval: 'month' } });
    expect(response.status).toBe(200);
    expect(provider.requestsTo('POST', '/v1/customers').filter((request) => String(request.form.email).toLowerCase() === email)).toHaveLength(0);
    expect(provider.requestsTo('POST', '/v1/checkout/sessions').at(-1)!.form).toMatchObject({ customer });
  });

  it('answers a provider failure with 500 {error, message} that carries no provider text or secret', async () => {
    provider.failNext(500, 'api_error', `Something broke for key ${SECRET_KEY}`);
    provider.failNext(500, 'api_error', `Something broke for key ${SECRET_KEY}`);
    const response = await call(gateway.url, 'POST', '/billing/checkout', { body: { email: uniqueEmail('failing'), plan: 'starter', interval: 'month' } });
    expect(response.status).toBe(500);
    expect(response.body).toMatchObject({ error: 'payment_provider_error', message: 'The payment provider request failed' });
    expect(response.text).not.toContain(SECRET_KEY);
    expect(response.text).not.toContain('Something broke');
  });

  it('answers a provider that refuses the key (authentication error) with 500, no secret', async () => {
    provider.failNext(401, 'authentication_error', `Invalid API Key provided: ${SECRET_KEY}`);
    const response = await call(gateway.url, 'POST', '/billing/checkout', { body: { email: uniqueEmail('badkey'), plan: 'starter', interval: 'month' } });
    expect(response.status).toBe(500);
    expect(response.body.error).toBe('payment_provider_error');
    expect(response.text).not.toContain(SECRET_KEY);
  });

  it('answers a price the provider does not know (a PAYMENT_PRICE_* id left at its placeholder) with 500, not a missing customer', async () => {
    provider.unknownPrices.add(PRICES.PAYMENT_PRICE_STARTER_ANNUAL);
    try {
      const response = await call(gateway.url, 'POST', '/billing/checkout', { body: { email: uniqueEmail('noprice'), plan: 'starter', interval: 'year' } });
      expect(response.status).toBe(500);
      expect(response.body).toMatchObject({ error: 'payment_provider_error', message: 'The payment provider request failed' });
    } finally {
      provider.unknownPrices.delete(PRICES.PAYMENT_PRICE_STARTER_ANNUAL);
    }
  });
});

describe('POST /billing/portal', () => {
  it('answers 401 without a bearer admin token, with an invalid one, and for X-Admin-Token alone', async () => {
    const org = await createOrganization(gateway, 'free');
    const body = { customerId: 'cus_x' };
    for (const options of [{ body }, { body, bearer: 'adm_not-a-token' }, { body, adminToken: org.adminToken }, { body, headers: { authorization: `Basic ${org.adminToken}` } }]) {
      const response = await call(gateway.url, 'POST', '/billing/portal', options);
      expect(response.status).toBe(401);
      expect(response.body.error).toBe('unauthorized');
    }
  });

  it('answers 400 for a missing or invalid customerId', async () => {
    const org = await createOrganization(gateway, 'free');
    for (const body of [{}, { customerId: '' }, { customerId: 12 }, { customerId: 'cus x/../' }]) {
      const response = await call(gateway.url, 'POST', '/billing/portal', { bearer: org.adminToken, body });
      expect(response.status).toBe(400);
      expect(response.body.message).toContain('customerId');
    }
  });

  it('answers 404 for a customer that is not the calling organization\'s', async () => {
    const owner = await subscribedOrganization('starter');
    const other = await createOrganization(gateway, 'free');
    for (const customerId of [owner.customer, 'cus_unknown123']) {
      const response = await call(gateway.url, 'POST', '/billing/portal', { bearer: other.adminToken, body: { customerId } });
      expect(response.status).toBe(404);
      expect(response.body.error).toBe('not_found');
    }
  });

  it('returns a portal URL for the organization\'s own customer, returning to PUBLIC_URL', async () => {
    const owner = await subscribedOrganization('starter');
    const response = await call<{ portalUrl: string }>(gateway.url, 'POST', '/billing/portal', { bearer: owner.adminToken, body: { customerId: owner.customer } });
    expect(response.status).toBe(200);
    expect(response.body.portalUrl).toMatch(/^https:\/\/billing\.fake-provider\.test\/p\/session\/bps_/);
    const request = provider.requestsTo('POST', '/v1/billing_portal/sessions').at(-1)!;
    expect(request.form).toEqual({ customer: owner.customer, return_url: TEST_PUBLIC_URL });
  });

  it('answers 404 when the provider no longer knows the customer', async () => {
    const owner = await subscribedOrganization('starter');
    provider.customers.delete(owner.customer);
    const response = await call(gateway.url, 'POST', '/billing/portal', { bearer: owner.adminToken, body: { customerId: owner.customer } });
    expect(response.status).toBe(404);
  });
});

describe('POST /billing/webhook: signature', () => {
  const event = () => checkoutCompleted({ customer: null, email: uniqueEmail('sig'), subscription: id('sub'), plan: 'starter' });

  it('answers 400 {error} for a missing, wrong, tampered or stale signature, and changes nothing', async () => {
    const good = event();
    const payload = JSON.stringify(good);
    const tampered = payload.replace('"starter"', '"professional"');
    const responses = [
      await call(gateway.url, 'POST', '/billing/webhook', { body: payload, headers: { 'content-type': 'application/json' } }),
      await deliver(good, { secret: 'whsec_wrong' }),
      await call(gateway.url, 'POST', '/billing/webhook', {
        body: tampered,
        headers: { 'content-type': 'application/json', 'provider-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) },
      }),
      await deliver(good, { timestamp: nowSeconds() - 301 }),
      await call(gateway.url, 'POST', '/billing/webhook', { body: payload, headers: { 'content-type': 'application/json', 'provider-signature': 'garbage' } }),
    ];
    for (const response of responses) {
      expect(response.status).toBe(400);
      expect(typeof response.body.error).toBe('string');
    }
    expect(provider.requestsTo('POST', '/v1/customers').filter((request) => request.form.email === good.data.object.customer_email)).toHaveLength(0);
  });

  it('accepts a signature within the five-minute tolerance', async () => {
    const response = await deliver({ id: id('evt'), object: 'event', type: 'invoice.paid', created: nowSeconds(), data: { object: { id: 'in_1' } } }, { timestamp: nowSeconds() - 240 });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ received: true });
  });

  it('answers 400 for a validly signed but malformed event', async () => {
    const cases = [
      { id: id('evt'), type: 'checkout.session.completed', created: nowSeconds() },
      { id: id('evt'), type: 'checkout.session.completed', created: nowSeconds(), data: { object: { id: 'cs_1', customer: 'cus_1', metadata: { plan: 'gold' } } } },
      { id: id('evt'), type: 'customer.subscription.updated', created: nowSeconds(), data: { object: { id: 'sub_1', status: 'active' } } },
    ];
    for (const event of cases) {
      const response = await deliver(event);
      expect(response.status).toBe(400);
      expect(typeof response.body.error).toBe('string');
    }
    const notJson = await deliver({}, { body: '{"id": ' });
    expect(notJson.status).toBe(400);
    const payload = JSON.stringify(cases[0]);
    const notJsonType = await call(gateway.url, 'POST', '/billing/webhook', {
      body: payload,
      headers: { 'content-type': 'text/plain', 'provider-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) },
    });
    expect(notJsonType.status).toBe(400);
    expect(notJsonType.body.message).toContain('application/json');
  });

  it('acknowledges an unknown event type with 200 and changes nothing', async () => {
    const org = await subscribedOrganization('starter');
    const response = await deliver({ id: id('evt'), type: 'customer.created', created: nowSeconds(), data: { object: { id: org.customer, email: 'x@example.com' } } });
    expect(response.status).toBe(200);
    expect((await organization(org.adminToken)).plan).toBe('starter');
  });

  it('acknowledges a checkout this gateway did not start (no metadata.plan: a payment link, another product) with 200 and changes nothing', async () => {
    const org = await subscribedOrganization('professional');
    const foreign = checkoutCompleted({ customer: org.customer, email: null, subscription: id('sub'), plan: 'starter' });
    delete (foreign.data.object as { metadata?: unknown }).metadata;
    const response = await deliver(foreign);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ received: true });
    expect((await organization(org.adminToken)).plan).toBe('professional');
  });
});

describe('POST /billing/webhook: checkout.session.completed', () => {
  it('tries the confirmation mail again when the mail server refuses it for a moment', async () => {
    const email = uniqueEmail('refused-once');
    smtp.refuseNext(email, 1);
    const response = await deliver(checkoutCompleted({ customer: null, email, subscription: id('sub'), plan: 'starter' }));
    expect(response.status).toBe(200);
    // The admin token of the organization the checkout created is written nowhere else.
    const mail = await smtp.waitFor(email, 15_000);
    expect(smtp.refused.filter((address) => address === email)).toHaveLength(1);
    const token = /^ {4}(adm_[A-Za-z0-9_-]+)\s*$/m.exec(mail.raw)?.[1];
    expect((await organization(token!)).billingEmail).toBe(email);
  });

  it('creates an organization for a new email, sets the plan, audits it and mails the admin token', async () => {
    const email = uniqueEmail('newcomer');
    const subscription = id('sub');
    const response = await deliver(checkoutCompleted({ customer: null, email, subscription, plan: 'starter' }));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ received: true });
    // No customer in the event: it is looked up or created by email at the provider.
    const customer = [...provider.customers.values()].find((candidate) => candidate.email === email)!;
    expect(customer).toBeDefined();

    const mail = await smtp.waitFor(email);
    expect(mail.from).toBe('billing@gateway.test');
    const token = /^ {4}(adm_[A-Za-z0-9_-]+)\s*$/m.exec(mail.raw)?.[1];
    expect(token).toBeDefined();
    const org = await organization(token!);
    expect(org).toMatchObject({ plan: 'starter', billingEmail: email, customerId: customer.id });
    expect(org.limits).toEqual({ agents: 10, policyChecksPerMonth: 25000, policies: 25, auditRetentionDays: 30, teamMembers: 5 });
    expect(mail.raw).toContain(org.id);

    const audit = await billingAudit(token!, 1);
    expect(audit[0]).toMatchObject({ action: 'admin:billing.checkout_completed', details: { previous: { plan: null }, next: { plan: 'starter' }, subscription, customerId: customer.id, createdOrganization: true } });
  });

  it('upgrades the organization with that billing email and links the customer; the mail carries no token', async () => {
    const email = uniqueEmail('existing');
    const { organization: created, adminToken } = await gateway.app.get(OrganizationsService).create({ name: 'Existing', billingEmail: email });
    const customer = provider.addCustomer(email);
    expect((await deliver(checkoutCompleted({ customer, email: email.toUpperCase(), subscription: id('sub'), plan: 'professional' }))).status).toBe(200);
    expect(await organization(adminToken)).toMatchObject({ id: created.id, plan: 'professional', customerId: customer });
    const mail = await smtp.waitFor(email.toUpperCase());
    expect(mail.raw).toContain('Professional');
    expect(mail.raw).not.toMatch(/adm_[A-Za-z0-9_-]{20,}/);
    const audit = await billingAudit(adminToken, 1);
    expect(audit[0]).toMatchObject({ details: { previous: { plan: 'free' }, next: { plan: 'professional' }, createdOrganization: false } });
  });

  it('finds the organization by customer id first, whatever email the event carries', async () => {
    const org = await subscribedOrganization('starter');
    const response = await deliver(checkoutCompleted({ customer: org.customer, email: uniqueEmail('other'), subscription: id('sub'), plan: 'professional' }));
    expect(response.status).toBe(200);
    expect((await organization(org.adminToken)).plan).toBe('professional');
  });

  it('processes each event id once: a replay answers 200 and changes nothing', async () => {
    const email = uniqueEmail('replayed');
    const customer = provider.addCustomer(email);
    const subscription = id('sub');
    const created = nowSeconds() - 100;
    const checkout = checkoutCompleted({ customer, email, subscription, plan: 'starter', created });
    expect((await deliver(checkout)).status).toBe(200);
    const mail = await smtp.waitFor(email);
    const token = /^ {4}(adm_[A-Za-z0-9_-]+)\s*$/m.exec(mail.raw)![1];
    // A newer change, then the checkout delivered again.
    expect((await deliver(subscriptionEvent('customer.subscription.updated', { subscription, customer, status: 'active', price: PRICES.PAYMENT_PRICE_PROFESSIONAL_MONTHLY, created: created + 10 }))).status).toBe(200);
    const replay = await deliver(checkout);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ received: true });
    expect((await organization(token)).plan).toBe('professional');
    const count = await gateway.app.get(DataSource).query('SELECT count(*)::int AS n FROM organizations WHERE lower(billing_email) = lower($1)', [email]);
    expect(count[0].n).toBe(1);
    expect(smtp.messages.filter((message) => message.to.includes(email))).toHaveLength(1);
    expect((await billingAudit(token, 2)).map((entry) => entry.action)).toEqual(['admin:billing.subscription_updated', 'admin:billing.checkout_completed']);
  });
});

describe('POST /billing/webhook: concurrent deliveries', () => {
  it('applies an event delivered twice at once exactly once', async () => {
    const email = uniqueEmail('concurrent');
    const customer = provider.addCustomer(email);
    const checkout = checkoutCompleted({ customer, email, subscription: id('sub'), plan: 'professional' });
    const responses = await Promise.all([deliver(checkout), deliver(checkout), deliver(checkout)]);
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200]);
    const rows = await gateway.app.get(DataSource).query('SELECT plan FROM organizations WHERE customer_id = $1', [customer]);
    expect(rows).toEqual([{ plan: 'professional' }]);
    await smtp.waitFor(email);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(smtp.messages.filter((message) => message.to.includes(email))).toHaveLength(1);
  });
});

describe('POST /billing/webhook: customer.subscription.updated and .deleted', () => {
  it('sets the plan from the new price id (monthly or annual) and audits the change', async () => {
    const org = await subscribedOrganization('starter');
    const base = nowSeconds() - 500;
    const up = await deliver(subscriptionEvent('customer.subscription.updated', { ...org, subscription: org.subscription, status: 'active', price: PRICES.PAYMENT_PRICE_PROFESSIONAL_ANNUAL, interval: 'year', created: base + 1 }));
    expect(up.status).toBe(200);
    expect(await organization(org.adminToken)).toMatchObject({ plan: 'professional', limits: { agents: 50, policies: -1, auditRetentionDays: 90 } });
    const down = await deliver(subscriptionEvent('customer.subscription.updated', { ...org, subscription: org.subscription, status: 'active', price: PRICES.PAYMENT_PRICE_STARTER_MONTHLY, created: base + 2 }));
    expect(down.status).toBe(200);
    expect((await organization(org.adminToken)).plan).toBe('starter');
    const audit = await billingAudit(org.adminToken, 3);
    expect(audit.slice(0, 2)).toMatchObject([
      { action: 'admin:billing.subscription_updated', details: { previous: { plan: 'professional' }, next: { plan: 'starter' }, subscription: org.subscription } },
      { action: 'admin:billing.subscription_updated', details: { previous: { plan: 'starter' }, next: { plan: 'professional' } } },
    ]);
  });

  it('ignores (200) a price this gateway does not sell', async () => {
    const org = await subscribedOrganization('starter');
    const response = await deliver(subscriptionEvent('customer.subscription.updated', { ...org, status: 'active', price: 'price_someone_elses', created: nowSeconds() }));
    expect(response.status).toBe(200);
    expect((await organization(org.adminToken)).plan).toBe('starter');
  });

  it('acknowledges (200) the subscriptions of prices this gateway does not sell, whoever the customer, and changes nothing', async () => {
    const org = await subscribedOrganization('starter');
    const stranger = provider.addCustomer(uniqueEmail('stranger'));
    for (const customer of [stranger, org.customer]) {
      const subscription = id('sub');
      for (const type of ['customer.subscription.updated', 'customer.subscription.deleted'] as const) {
        const status = type === 'customer.subscription.updated' ? 'active' : 'canceled';
        const response = await deliver(subscriptionEvent(type, { subscription, customer, status, price: 'price_someone_elses', created: nowSeconds() }));
        expect({ customer, type, status: response.status }).toEqual({ customer, type, status: 200 });
      }
    }
    expect((await organization(org.adminToken)).plan).toBe('starter');
  });

  it('an update whose status is canceled puts the organization on free', async () => {
    const org = await subscribedOrganization('professional');
    const response = await deliver(subscriptionEvent('customer.subscription.updated', { ...org, status: 'canceled', price: PRICES.PAYMENT_PRICE_PROFESSIONAL_MONTHLY, created: nowSeconds() }));
    expect(response.status).toBe(200);
    expect((await organization(org.adminToken)).plan).toBe('free');
  });

  it('deleted puts the organization on free and audits the cancellation', async () => {
    const org = await subscribedOrganization('professional');
    const response = await deliver(subscriptionEvent('customer.subscription.deleted', { ...org, status: 'canceled', created: nowSeconds() }));
    expect(response.status).toBe(200);
    expect(await organization(org.adminToken)).toMatchObject({ plan: 'free', limits: { agents: 2, policyChecksPerMonth: 1000, policies: 3, auditRetentionDays: 7, teamMembers: 1 } });
    const audit = await billingAudit(org.adminToken, 2);
    expect(audit[0]).toMatchObject({ action: 'admin:billing.subscription_canceled', details: { previous: { plan: 'professional' }, next: { plan: 'free' }, status: 'canceled' } });
  });

  it('an older event arriving after a newer one does not roll the plan back', async () => {
    const org = await subscribedOrganization('starter');
    const base = nowSeconds() - 200;
    const newer = subscriptionEvent('customer.subscription.updated', { ...org, status: 'active', price: PRICES.PAYMENT_PRICE_PROFESSIONAL_MONTHLY, created: base + 20 });
    const older = subscriptionEvent('customer.subscription.updated', { ...org, status: 'active', price: PRICES.PAYMENT_PRICE_STARTER_MONTHLY, created: base + 10 });
    expect((await deliver(newer)).status).toBe(200);
    expect((await deliver(older)).status).toBe(200);
    expect((await organization(org.adminToken)).plan).toBe('professional');

    // A cancellation, then an update from before it: the subscription stays ended.
    expect((await deliver(subscriptionEvent('customer.subscription.deleted', { ...org, status: 'canceled', created: base + 40 }))).status).toBe(200);
    expect((await deliver(subscriptionEvent('customer.subscription.updated', { ...org, status: 'active', price: PRICES.PAYMENT_PRICE_PROFESSIONAL_ANNUAL, created: base + 30 }))).status).toBe(200);
    expect((await organization(org.adminToken)).plan).toBe('free');
    // The checkout that started it all, delivered last, changes nothing either.
    expect((await deliver(checkoutCompleted({ customer: org.customer, email: null, subscription: org.subscription, plan: 'professional', created: base }))).status).toBe(200);
    expect((await organization(org.adminToken)).plan).toBe('free');
  });

  it('answers 404 for a subscription of an unknown customer and applies it when redelivered after the checkout', async () => {
    const email = uniqueEmail('early');
    const customer = provider.addCustomer(email);
    const subscription = id('sub');
    const base = nowSeconds() - 100;
    const update = subscriptionEvent('customer.subscription.updated', { subscription, customer, status: 'active', price: PRICES.PAYMENT_PRICE_PROFESSIONAL_MONTHLY, created: base + 5 });
    const early = await deliver(update);
    expect(early.status).toBe(404);
    expect(early.body.error).toBe('not_found');
    expect((await deliver(subscriptionEvent('customer.subscription.deleted', { subscription, customer, status: 'canceled', created: base + 6, eventId: id('evt') }))).status).toBe(404);

    expect((await deliver(checkoutCompleted({ customer, email, subscription, plan: 'starter', created: base }))).status).toBe(200);
    const token = /^ {4}(adm_[A-Za-z0-9_-]+)\s*$/m.exec((await smtp.waitFor(email)).raw)![1];
    expect((await organization(token)).plan).toBe('starter');
    expect((await deliver(update)).status).toBe(200);
    expect((await organization(token)).plan).toBe('professional');
  });
});

describe('plan limits', () => {
  async function createAgent(org: TestOrganization, name: string): Promise<TestResponse> {
    return call(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name, trustTier: 'verified' } });
  }

  async function putPolicy(org: TestOrganization, name: string): Promise<TestResponse> {
    return call(gateway.url, 'PUT', `/admin/policies/${name}`, {
      adminToken: org.adminToken,
      body: { name, rules: [{ condition: 'args.x == 1', action: 'deny', reason: 'no' }] },
    });
  }

  it('after a cancellation, existing agents and policies stay and keep working, and nothing new passes the free limits', async () => {
    const org = await subscribedOrganization('starter');
    const agents: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < 3; i++) {
      const created = await createAgent(org, `agent-${i}`);
      expect(created.status).toBe(201);
      agents.push(created.body as { id: string; token: string });
    }
    for (let i = 0; i < 4; i++) expect((await putPolicy(org, `policy-${i}`)).status).toBe(201);

    expect((await deliver(subscriptionEvent('customer.subscription.deleted', { ...org, status: 'canceled', created: nowSeconds() }))).status).toBe(200);
    expect((await organization(org.adminToken)).plan).toBe('free');

    const listed = await call<{ agents: Array<{ id: string }> }>(gateway.url, 'GET', '/admin/agents', { adminToken: org.adminToken });
    expect(listed.body.agents.map((agent) => agent.id).sort()).toEqual(agents.map((agent) => agent.id).sort());
    const policies = await call<{ policies: Array<{ name: string }> }>(gateway.url, 'GET', '/admin/policies', { adminToken: org.adminToken });
    expect(policies.body.policies).toHaveLength(4);
    const proxied = await call(gateway.url, 'GET', '/proxy/orders', { bearer: agents[0].token });
    expect(proxied.status).toBe(200);
    expect(proxied.headers.get('x-service-decision')).toBe('allow');

    const agent = await createAgent(org, 'one-too-many');
    expect(agent.status).toBe(403);
    expect(agent.body).toMatchObject({ error: 'plan_limit_exceeded', limit: 2, plan: 'free' });
    const policy = await putPolicy(org, 'one-too-many');
    expect(policy.status).toBe(403);
    expect(policy.body).toMatchObject({ error: 'plan_limit_exceeded', limit: 3, plan: 'free' });
    // An existing policy can still be replaced.
    expect((await putPolicy(org, 'policy-0')).status).toBe(200);
  });

  it('an upgrade raises the limits at once', async () => {
    const org = await subscribedOrganization('starter');
    await deliver(subscriptionEvent('customer.subscription.deleted', { ...org, status: 'canceled', created: nowSeconds() - 5 }));
    for (let i = 0; i < 2; i++) expect((await createAgent(org, `a-${i}`)).status).toBe(201);
    expect((await createAgent(org, 'a-2')).status).toBe(403);
    const resubscribed = id('sub');
    expect((await deliver(checkoutCompleted({ customer: org.customer, email: null, subscription: resubscribed, plan: 'starter' }))).status).toBe(200);
    expect((await createAgent(org, 'a-2')).status).toBe(201);
  });

  it('admin tokens and other team credentials count against teamMembers', async () => {
    const organizations = gateway.app.get(OrganizationsService);
    const dataSource = gateway.app.get(DataSource);
    const check = (orgId: string) =>
      dataSource.transaction((manager) => organizations.assertCanAdd(manager, orgId, 'teamMembers', () => organizations.countTeamCredentials(manager, orgId)));
    const free = await createOrganization(gateway, 'free');
    const refused = await check(free.id).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).toBody()).toMatchObject({ error: 'plan_limit_exceeded', limit: 1, plan: 'free' });
    const starter = await createOrganization(gateway, 'starter');
    await expect(check(starter.id)).resolves.toBeUndefined();
  });

  it('a cancellation brings the free monthly policy-check quota into force on the proxy', async () => {
    const org = await subscribedOrganization('starter');
    const agent = (await createAgent(org, 'busy')).body as { token: string };
    const period = new Date().toISOString().slice(0, 7);
    await gateway.app.get(DataSource).query(
      `INSERT INTO usage_counters (org_id, period, policy_checks) VALUES ($1, $2, 1000)
       ON CONFLICT (org_id, period) DO UPDATE SET policy_checks = 1000`,
      [org.id, period],
    );
    expect((await call(gateway.url, 'GET', '/proxy/work', { bearer: agent.token })).status).toBe(200);
    expect((await deliver(subscriptionEvent('customer.subscription.deleted', { ...org, status: 'canceled', created: nowSeconds() }))).status).toBe(200);
    // The usage meter picks up plan changes at its next flush (every second).
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const refused = await call(gateway.url, 'GET', '/proxy/work', { bearer: agent.token });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('quota_exceeded');
  });

  it('the audit retention follows the plan', async () => {
    const org = await subscribedOrganization('professional');
    expect((await organization(org.adminToken)).limits.auditRetentionDays).toBe(90);
    await deliver(subscriptionEvent('customer.subscription.deleted', { ...org, status: 'canceled', created: nowSeconds() }));
    expect((await organization(org.adminToken)).limits.auditRetentionDays).toBe(7);
  });
});

describe('without the payment provider configured', () => {
  let disabled: TestGateway;

  beforeAll(async () => {
    disabled = await startGateway({ ...PRICES });
  });

  afterAll(async () => {
    await disabled?.close();
  });

  it('still lists the plans', async () => {
    const response = await call<{ plans: Array<{ id: string }> }>(disabled.url, 'GET', '/billing/plans');
    expect(response.status).toBe(200);
    expect(response.body.plans.map((plan) => plan.id)).toEqual(['free', 'starter', 'professional', 'enterprise']);
  });

  it('answers 503 billing_disabled for checkout, portal and webhooks, after validating the input', async () => {
    const before = provider.requests.length;
    const checkout = await call(disabled.url, 'POST', '/billing/checkout', { body: { email: uniqueEmail('off'), plan: 'starter', interval: 'month' } });
    expect(checkout.status).toBe(503);
    expect(checkout.body.error).toBe('billing_disabled');
    expect((await call(disabled.url, 'POST', '/billing/checkout', { body: { email: 'x', plan: 'starter', interval: 'month' } })).status).toBe(400);

    const owner = await subscribedOrganization('starter');
    const portal = await call(disabled.url, 'POST', '/billing/portal', { bearer: owner.adminToken, body: { customerId: owner.customer } });
    expect(portal.status).toBe(503);
    expect(portal.body.error).toBe('billing_disabled');

    const payload = JSON.stringify(checkoutCompleted({ customer: owner.customer, email: null, subscription: id('sub'), plan: 'professional' }));
    const webhook = await call(disabled.url, 'POST', '/billing/webhook', {
      body: payload,
      headers: { 'content-type': 'application/json', 'provider-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) },
    });
    expect(webhook.status).toBe(503);
    expect(webhook.body.error).toBe('billing_disabled');
    expect((await organization(owner.adminToken)).plan).toBe('starter');
    // subscribedOrganization itself went through the configured gateway only.
    expect(provider.requests.slice(before).every((request) => request.authorization === `Bearer ${SECRET_KEY}`)).toBe(true);
  });
});
