import { CredentialIndex, InjectedCredential } from './upstream-credentials';

const credential = (id: string): InjectedCredential => ({ id, placement: { type: 'bearer' }, value: `value-${id}` });

describe('CredentialIndex', () => {
  const index = new CredentialIndex();
  index.set('org_a', { kind: 'proxy', prefix: 'payments' }, credential('pay'));
  index.set('org_a', { kind: 'proxy', prefix: 'payments/archive' }, credential('archive'));
  index.set('org_a', { kind: 'mcp', server: 'github' }, credential('gh'));
  index.set('org_b', { kind: 'proxy', prefix: '' }, credential('all-of-b'));

  it.each([
    ['payments', 'pay'],
    ['payments/1', 'pay'],
    ['PAYMENTS/1', 'pay'],
    ['payments/archive/2020', 'archive'],
    ['payments/archived', 'pay'],
    ['paymentsx', undefined],
    ['orders', undefined],
  ])('gives %s the credential of its longest route (%s)', (path, id) => {
    expect(index.forProxy('org_a', path)?.id).toBe(id);
  });

  it('keeps organizations apart, and `/proxy` itself covers every path', () => {
    expect(index.forProxy('org_b', 'payments/1')?.id).toBe('all-of-b');
    expect(index.forProxy('org_c', 'payments/1')).toBeUndefined();
    expect(index.forMcpServer('org_a', 'github')?.id).toBe('gh');
    expect(index.forMcpServer('org_b', 'github')).toBeUndefined();
  });

  it('forgets a deleted credential', () => {
    const local = new CredentialIndex();
    local.set('org_a', { kind: 'proxy', prefix: 'payments' }, credential('pay'));
    local.delete('pay');
    expect(local.forProxy('org_a', 'payments')).toBeUndefined();
  });
});
