import type { AddressInfo } from 'node:net';
import { NestExpressApplication } from '@nestjs/platform-express';
import pino from 'pino';
import { AppConfig } from '../../src/core/config/app-config';
import { createGateway } from '../../src/gateway/app/gateway';
import { OrganizationsService } from '../../src/gateway/organizations/organizations.service';
import type { PlanId } from '../../src/core/config/plans';

/** Issuer shared by every instance of a run, so tokens verify across instances. */
export const TEST_PUBLIC_URL = 'http://gateway.test';
export const TEST_ADMIN_TOKEN = 'e2e-bootstrap-admin-token-0123456789';

/** A gateway started in this process the way `npm start` starts it, listening on a free port. */
export interface TestGateway {
  url: string;
  app: NestExpressApplication;
  config: AppConfig;
  close(): Promise<void>;
}

export interface TestOrganization {
  id: string;
  adminToken: string;
}

/** The test database of this run (see global-setup). */
export function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: run through jest (test/support/global-setup.ts)');
  return url;
}

export function testDatabaseKind(): 'pglite' | 'postgres' {
  return process.env.TEST_DB_KIND === 'postgres' ? 'postgres' : 'pglite';
}

/** Environment of a test gateway; `env` overrides any of it. */
export function testEnv(env: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: testDatabaseUrl(),
    // PGlite is one session: test instances use one connection, exactly like the embedded mode.
    DATABASE_POOL_MAX: testDatabaseKind() === 'pglite' ? '1' : '4',
    PORT: '0',
    HOST: '127.0.0.1',
    PDP_GRPC_PORT: '0',
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    PUBLIC_URL: TEST_PUBLIC_URL,
    SIGNING_KEY_FILE: process.env.TEST_SIGNING_KEY_FILE!,
    POLICIES_FILE: '/dev/null',
    AUDIT_FLUSH_MS: '10',
    LOG_LEVEL: 'error',
    ...env,
  };
}

/** Starts a gateway on the shared test database (or DATABASE_URL of `env`); `logger` gets what it logs (nothing by default). */
export async function startGateway(env: Record<string, string> = {}, logger: pino.Logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })): Promise<TestGateway> {
  const config = AppConfig.fromEnv(testEnv(env));
  const app = await createGateway(config, logger);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, app, config, close: () => app.close() };
}

/** A fresh organization with its own admin token: test files isolate their data this way. */
export async function createOrganization(gateway: TestGateway, plan: PlanId = 'enterprise', name = 'Test org'): Promise<TestOrganization> {
  const { organization, adminToken } = await gateway.app.get(OrganizationsService).create({ name, plan });
  return { id: organization.id, adminToken };
}
