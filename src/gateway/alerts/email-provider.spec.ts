import { emailsUrl } from './email-provider';

describe('emailsUrl', () => {
  it.each([
    ['https://api.resend.com', 'https://api.resend.com/emails'],
    ['https://api.resend.com/', 'https://api.resend.com/emails'],
    ['http://127.0.0.1:4182/v1?tenant=abc', 'http://127.0.0.1:4182/v1/emails?tenant=abc'],
    ['http://127.0.0.1:4182/v1/?tenant=a/b', 'http://127.0.0.1:4182/v1/emails?tenant=a/b'],
  ])('%s posts to %s', (base, expected) => {
    expect(emailsUrl(base).href).toBe(expected);
  });
});
