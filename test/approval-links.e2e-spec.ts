import { call } from './support/http-client';
import { startGateway, TestGateway } from './support/test-gateway';

/** The signed links' pages answer bad input with a page saying so, never a 500 (docs/approvals.md). */

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startGateway();
});
afterAll(async () => {
  await gateway.close();
});

describe('POST /approvals/:id/approve', () => {
  it.each([
    ['without a body', undefined, {}],
    ['with a JSON body', JSON.stringify({ token: 'x' }), { 'content-type': 'application/json' }],
    ['with a tampered token', 'expires=99999999999999&token=%E2%82%AC%E2%82%AC', { 'content-type': 'application/x-www-form-urlencoded' }],
  ])('answers %s with the page that says the link cannot be used', async (_what, body, headers) => {
    const answer = await call(gateway.url, 'POST', '/approvals/appr_000000000000000000000000/approve', { body, headers });
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('This link cannot be used');
  });
});
