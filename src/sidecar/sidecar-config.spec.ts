import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { ConfigError } from '../core/config/app-config';
import { SidecarConfig } from './sidecar-config';

/** The ConfigError message of a start with `env` (besides the required variables). */
function problemsOf(env: Record<string, string>): string {
  try {
    SidecarConfig.fromEnv({ GATEWAY_URL: 'http://gw', ADMIN_TOKEN: 'x', ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  return '';
}

describe('SidecarConfig', () => {
  it('has the defaults of docs/configuration.md', () => {
    const config = SidecarConfig.fromEnv({ GATEWAY_URL: 'http://gw:3000/', ADMIN_TOKEN: 'adm_secret' });
    expect(config).toMatchObject({ gatewayUrl: 'http://gw:3000', adminToken: 'adm_secret', mode: 'enforce', syncIntervalMs: 60_000, port: 4000, host: '0.0.0.0', cacheDir: '/cache', logLevel: 'info' });
    expect(config.proxy.upstreamUrl).toBeUndefined();
  });

  it('names every missing required variable at once', () => {
    let error: unknown;
    try {
      SidecarConfig.fromEnv({ MODE: 'loud' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toContain('GATEWAY_URL is required');
    expect(message).toContain('ADMIN_TOKEN is required');
    expect(message).toContain('MODE="loud"');
  });

  it('passes UPSTREAM_URL on to the proxy it shares with the gateway', () => {
    const config = SidecarConfig.fromEnv({ GATEWAY_URL: 'http://gw', ADMIN_TOKEN: 'x', UPSTREAM_URL: 'http://up:8080', MODE: 'audit', BUNDLE_SYNC_INTERVAL: '5' });
    expect(config.proxy.upstreamUrl).toBe('http://up:8080');
    expect(config.mode).toBe('audit');
    expect(config.syncIntervalMs).toBe(5000);
  });

  describe('BUNDLE_PUBLIC_KEY', () => {
    const gateway = generateKeyPairSync('ed25519');
    const pem = gateway.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const jwk = JSON.stringify(gateway.publicKey.export({ format: 'jwk' }));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sidecar-config-'));
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    it.each([
      ['PEM', () => pem],
      ['a JWK as JSON', () => jwk],
      ['the path of a PEM file', () => (fs.writeFileSync(path.join(dir, 'gateway.pem'), pem), path.join(dir, 'gateway.pem'))],
      ['the path of a JWK file', () => (fs.writeFileSync(path.join(dir, 'gateway.jwk'), jwk), path.join(dir, 'gateway.jwk'))],
    ])('takes %s', (_label, value) => {
      const config = SidecarConfig.fromEnv({ GATEWAY_URL: 'http://gw', ADMIN_TOKEN: 'x', BUNDLE_PUBLIC_KEY: value() });
      expect(config.bundlePublicKey?.equals(gateway.publicKey)).toBe(true);
    });

    it('names a file it cannot read', () => {
      expect(problemsOf({ BUNDLE_PUBLIC_KEY: path.join(dir, 'missing.pem') })).toContain(`BUNDLE_PUBLIC_KEY file ${JSON.stringify(path.join(dir, 'missing.pem'))}: cannot be read (ENOENT)`);
    });

    it('refuses a private key without quoting it', () => {
      const privatePem = gateway.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const message = problemsOf({ BUNDLE_PUBLIC_KEY: privatePem });
      expect(message).toContain('BUNDLE_PUBLIC_KEY: a private key, not a public one');
      expect(message).not.toContain(privatePem.split('\n')[1]);
      const privateJwk = JSON.stringify(gateway.privateKey.export({ format: 'jwk' }));
      expect(problemsOf({ BUNDLE_PUBLIC_KEY: privateJwk })).toContain('a private key, not a public one');
    });

    it('refuses a key the gateway cannot sign with, and text that is no key', () => {
      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
      expect(problemsOf({ BUNDLE_PUBLIC_KEY: rsa })).toContain('key type rsa, not Ed25519 or P-256');
      expect(problemsOf({ BUNDLE_PUBLIC_KEY: '{"kty":' })).toContain('BUNDLE_PUBLIC_KEY: not a PEM key or a JWK as JSON');
      fs.writeFileSync(path.join(dir, 'big.pem'), Buffer.alloc(65 * 1024, 'a'));
      expect(problemsOf({ BUNDLE_PUBLIC_KEY: path.join(dir, 'big.pem') })).toContain('larger than 64 KiB');
    });
  });
});
