import { Document, isMap, isPair, isScalar, isSeq } from 'yaml';
import { keyText } from './yaml-locator';

/**
 * Source offsets of every mapping key that repeats an earlier key of its mapping. yaml's own
 * `uniqueKeys` check compares each key with every earlier one, so a body of many keys took
 * minutes (80,000 keys: 38 s); this is one pass with a set per mapping. Keys compare as the
 * strings they become in the loaded value (`1` and `"1"` are the same key there), and the walk
 * is iterative: a deeply nested document must not overflow the stack.
 */
export function duplicateKeyOffsets(document: Document): number[] {
  const offsets: number[] = [];
  const pending: unknown[] = [document.contents];
  while (pending.length > 0) {
    const node = pending.pop();
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        pending.push(pair.value);
        const key = keyText(pair.key);
        if (key === undefined) continue;
        if (seen.has(key) && isScalar(pair.key) && pair.key.range) offsets.push(pair.key.range[0]);
        seen.add(key);
      }
    } else if (isSeq(node)) {
      for (const item of node.items) pending.push(isPair(item) ? item.value : item);
    }
  }
  return offsets.sort((a, b) => a - b);
}
