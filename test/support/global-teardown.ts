import fs from 'node:fs';
import type { PgliteTestDatabase } from './pglite-test-database';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __pgliteTestDatabase?: PgliteTestDatabase }).__pgliteTestDatabase?.stop();
  if (process.env.TEST_SCRATCH_DIR) fs.rmSync(process.env.TEST_SCRATCH_DIR, { recursive: true, force: true });
}
