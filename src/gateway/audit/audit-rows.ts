import { hashEntryText } from './audit-chain';
import { entryHead } from '../../core/audit-record/audit-entry';
import type { QueuedParts } from '../../core/audit-record/audit-record';

/** Head of an organization's hash chain: the last sequence number and hash. */
export interface ChainHead {
  seq: number;
  hash: string;
}

/** An entry numbered and hashed in its organization's chain. */
export interface ChainedEntry {
  /** The canonical text (`entryText`). */
  text: string;
  prevHash: string;
  hash: string;
}

/** The entry's line for COPY: its canonical text and the two hash columns. */
export function copyLine(chained: ChainedEntry): string {
  return `${chained.text}\t${chained.prevHash}\t${chained.hash}\n`;
}

/** Content of a batch the database refused, retried without its payloads: input and details are the last two columns of AUDIT_ENTRY_COLUMNS. */
const STRIPPED_PAYLOADS = '\t\\N\t{"unstorable":true}';

/**
 * The stored row for a queued record (split by `queuedParts`): numbered and hashed as the next
 * entry after `head`, which is advanced. With `stripPayloads`, input and details are left out:
 * the retry of a batch the database refused.
 */
export function chainRow({ id, ts, orgIdText, content }: QueuedParts, head: ChainHead, stripPayloads = false): ChainedEntry {
  const seq = head.seq + 1;
  const text = entryHead(id, ts, orgIdText, seq) + (stripPayloads ? withoutPayloads(content) : content);
  const prevHash = head.hash;
  const hash = hashEntryText(prevHash, text);
  head.seq = seq;
  head.hash = hash;
  return { text, prevHash, hash };
}

function withoutPayloads(content: string): string {
  const beforeDetails = content.lastIndexOf('\t');
  return content.slice(0, content.lastIndexOf('\t', beforeDetails - 1)) + STRIPPED_PAYLOADS;
}
