import { hash } from 'node:crypto';
import { entryText, StoredAudit } from '../../core/audit-record/audit-entry';

/** prev_hash of an organization's first entry. */
export const GENESIS_HASH = '0'.repeat(64);

/** Hash of an entry's canonical text (`entryText`) chained to its predecessor's hash (SHA-256, hex). */
export function hashEntryText(prevHash: string, text: string): string {
  return hash('sha256', `${prevHash}\n${text}`, 'hex');
}

/** Hash of an entry chained to its predecessor. */
export function chainHash(prevHash: string, entry: StoredAudit): string {
  return hashEntryText(prevHash, entryText(entry));
}
