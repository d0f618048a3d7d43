import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SIDECAR_ID_FORMAT, SIDECAR_ID_RULE } from '../core/edge-protocol/sidecar-protocol';
import type { SidecarConfig } from './sidecar-config';
import { readFileIfExists, writeFileAtomic } from './atomic-file';

const ID_FILE = 'sidecar-id';

/**
 * This sidecar's id in the fleet status and its audit sequence: SIDECAR_ID, else one generated
 * at the first start and kept in CACHE_DIR (clearing the cache makes a new sidecar, whose
 * numbering starts again at 1).
 */
export function sidecarIdentity(config: SidecarConfig): string {
  if (config.sidecarId !== undefined) return config.sidecarId;
  fs.mkdirSync(config.cacheDir, { recursive: true });
  const file = path.join(config.cacheDir, ID_FILE);
  const kept = readFileIfExists(file)?.trim();
  if (kept !== undefined && kept !== '') return checked(kept, file);
  const id = `sc_${randomBytes(8).toString('hex')}`;
  writeFileAtomic(file, id);
  return id;
}

/**
 * An id the gateway refuses would stop every audit ingest for good while the sidecar reports
 * healthy, and keep it out of the fleet status: refuse to start instead.
 */
function checked(id: string, file: string): string {
  if (SIDECAR_ID_FORMAT.test(id)) return id;
  throw new Error(`${file} holds ${JSON.stringify(id.slice(0, 40))}, not a sidecar id (${SIDECAR_ID_RULE}): correct it, or set SIDECAR_ID`);
}
