import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { CredentialKey } from '../../core/config/credential-keys';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM for stored credential values: `iv ‖ tag ‖ ciphertext`, with the row's id and
 * organization as associated data, so a value copied onto another row or tenant does not decrypt.
 */
export function sealValue(key: CredentialKey, value: string, bound: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.bytes, iv);
  cipher.setAAD(Buffer.from(bound));
  const encrypted = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), encrypted]);
}

/** The value, or undefined when `sealed` was not made with this key for this row. */
export function openValue(key: CredentialKey, sealed: Buffer, bound: string): string | undefined {
  if (sealed.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(bound));
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/** What a row's value is bound to. */
export function boundTo(id: string, orgId: string): string {
  return `${id}\n${orgId}`;
}
