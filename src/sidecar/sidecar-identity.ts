import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { SidecarConfig } from '../config/sidecar-config';
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
  if (kept) return kept;
  const id = `sc_${randomBytes(8).toString('hex')}`;
  writeFileAtomic(file, id);
  return id;
}
