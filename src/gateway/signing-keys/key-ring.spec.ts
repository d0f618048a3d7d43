import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { Repository } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';
import { KeyRing } from './key-ring';
import { SigningKey } from './signing-key.entity';

/**
 * The hourly record of the signing key's use is written in the background of a signature. The
 * database failing at that moment (an outage, a full pool) must cost a warning, not the process:
 * an unhandled rejection ends Node (and fails this test under Jest). Forced here because no
 * e2e run can wait an hour.
 */
describe('KeyRing', () => {
  const HOUR_MS = 60 * 60 * 1000;
  let dir: string;
  let saves: number;
  let failSaves: boolean;
  let warnings: unknown[];

  async function keyRing(): Promise<KeyRing> {
    const keys = {
      create: (row: Partial<SigningKey>) => row,
      find: async () => [],
      query: async (sql: string) => {
        if (!sql.startsWith('INSERT INTO signing_keys')) return [];
        saves++;
        if (failSaves) throw new Error('connection terminated');
        return [];
      },
    } as unknown as Repository<SigningKey>;
    const config = { auth: { signingKeyFile: path.join(dir, 'signing-key.pem'), agentTokenTtlMs: 24 * HOUR_MS } } as AppConfig;
    const logger = { warn: (...args: unknown[]) => warnings.push(args) } as unknown as Logger;
    const ring = new KeyRing(config, keys, logger);
    await ring.onModuleInit();
    return ring;
  }

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-key-ring-'));
    saves = 0;
    failSaves = false;
    warnings = [];
  });
  afterEach(() => {
    jest.restoreAllMocks();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('survives a failed record of its use, warns, and tries again at the next signature', async () => {
    const ring = await keyRing();
    expect(saves).toBe(1);
    const start = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(start + 2 * HOUR_MS);
    failSaves = true;
    expect(ring.signingKey().kid).toEqual(expect.any(String));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(saves).toBe(2);
    expect(warnings).toHaveLength(1);

    failSaves = false;
    ring.signingKey();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(saves).toBe(3);
    ring.signingKey();
    expect(saves).toBe(3);
  });
});
