import { ConfigError } from './app-config';
import { SidecarConfig } from './sidecar-config';

describe('SidecarConfig', () => {
  it('has the defaults of SPEC.md', () => {
    const config = SidecarConfig.fromEnv({ GATEWAY_URL: 'http://gw:3000/', ADMIN_TOKEN: 'adm_secret' });
    expect(config).toMatchObject({ gatewayUrl: 'http://gw:3000', adminToken: 'adm_secret', mode: 'enforce', syncIntervalMs: 60_000, port: 4000, host: '0.0.0.0', cacheDir: '/cache', logLevel: 'info' });
    expect(config.shared.proxy.upstreamUrl).toBeUndefined();
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
    expect(config.shared.proxy.upstreamUrl).toBe('http://up:8080');
    expect(config.shared.mode).toBe('audit');
    expect(config.syncIntervalMs).toBe(5000);
  });
});
