import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

/** One request the fake received: form fields as the SDK encodes them (`line_items[0][price]`). */
export interface ProviderRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  form: Record<string, string>;
  authorization: string | undefined;
}

interface Customer {
  id: string;
  object: 'customer';
  email: string | null;
  created: number;
}

/**
 * A local fake of the payment provider's REST API (the Stripe endpoints billing calls):
 * customers list/retrieve/create, checkout sessions and billing-portal sessions, with
 * form-encoded bodies and the provider's error shape. Tests point PAYMENT_API_URL at it.
 */
export class FakePaymentProvider {
  readonly requests: ProviderRequest[] = [];
  readonly customers = new Map<string, Customer>();
  /** Price ids the provider has no record of (never created, deleted, or a placeholder id). */
  readonly unknownPrices = new Set<string>();
  private readonly server: http.Server;
  private failures: Array<{ status: number; type: string; code?: string; message: string }> = [];

  private constructor(readonly secretKey: string) {
    this.server = http.createServer((request, response) => void this.handle(request, response));
  }

  static async start(secretKey: string): Promise<FakePaymentProvider> {
    const fake = new FakePaymentProvider(secretKey);
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The next request answers this provider error instead. */
  failNext(status: number, type: string, message: string, code?: string): void {
    this.failures.push({ status, type, message, code });
  }

  /** A customer the provider knows already. */
  addCustomer(email: string | null): string {
    const customer: Customer = { id: `cus_${randomBytes(8).toString('hex')}`, object: 'customer', email, created: now() };
    this.customers.set(customer.id, customer);
    return customer.id;
  }

  requestsTo(method: string, path: string): ProviderRequest[] {
    return this.requests.filter((request) => request.method === method && request.path === path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://fake');
    const body = await readBody(request);
    const recorded: ProviderRequest = {
      method: request.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      form: Object.fromEntries(new URLSearchParams(body)),
      authorization: request.headers.authorization,
    };
    this.requests.push(recorded);
    const send = (status: number, payload: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(6).toString('hex')}` });
      response.end(JSON.stringify(payload));
    };
    if (recorded.authorization !== `Bearer ${this.secretKey}`) {
      return send(401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided: sk_test_****' } });
    }
    const failure = this.failures.shift();
    if (failure) return send(failure.status, { error: { type: failure.type, code: failure.code, message: failure.message } });
    const answer = this.route(recorded);
    send(answer.status, answer.body);
  }

  private route(request: ProviderRequest): { status: number; body: unknown } {
    const { method, path, form, query } = request;
    if (method === 'GET' && path === '/v1/customers') {
      const matching = [...this.customers.values()].filter((customer) => query.email === undefined || customer.email === query.email);
      return ok({ object: 'list', url: '/v1/customers', has_more: false, data: matching.slice(0, Number(query.limit ?? 10)) });
    }
    if (method === 'POST' && path === '/v1/customers') {
      const id = this.addCustomer(form.email ?? null);
      return ok(this.customers.get(id));
    }
    const customerPath = /^\/v1\/customers\/([^/]+)$/.exec(path);
    if (method === 'GET' && customerPath) {
      const customer = this.customers.get(decodeURIComponent(customerPath[1]));
      return customer ? ok(customer) : missing(`No such customer: '${customerPath[1]}'`, 'id');
    }
    if (method === 'POST' && path === '/v1/checkout/sessions') return this.checkoutSession(form);
    if (method === 'POST' && path === '/v1/billing_portal/sessions') {
      if (!this.customers.has(form.customer)) return missing(`No such customer: '${form.customer}'`, 'customer');
      const id = `bps_${randomBytes(8).toString('hex')}`;
      return ok({ id, object: 'billing_portal.session', customer: form.customer, return_url: form.return_url, url: `https://billing.fake-provider.test/p/session/${id}` });
    }
    return { status: 404, body: { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path})` } } };
  }

  private checkoutSession(form: Record<string, string>): { status: number; body: unknown } {
    if (!this.customers.has(form.customer)) return missing(`No such customer: '${form.customer}'`, 'customer');
    const price = form['line_items[0][price]'];
    if (this.unknownPrices.has(price)) return missing(`No such price: '${price}'`, 'line_items[0][price]', 400);
    if (form.mode !== 'subscription' || !form['line_items[0][price]']) {
      return { status: 400, body: { error: { type: 'invalid_request_error', message: 'mode and line_items are required' } } };
    }
    const id = `cs_test_${randomBytes(12).toString('hex')}`;
    return ok({
      id,
      object: 'checkout.session',
      mode: 'subscription',
      customer: form.customer,
      metadata: { plan: form['metadata[plan]'] },
      success_url: form.success_url,
      cancel_url: form.cancel_url,
      url: `https://checkout.fake-provider.test/c/pay/${id}`,
    });
  }
}

function ok(body: unknown): { status: number; body: unknown } {
  return { status: 200, body };
}

/** The provider's answer for an id it has no record of; `param` names the request field that held it. */
function missing(message: string, param: string, status = 404): { status: number; body: unknown } {
  return { status, body: { error: { type: 'invalid_request_error', code: 'resource_missing', param, message } } };
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}

function readBody(request: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}
