/** A run of sequence numbers, both ends included. */
export interface SequenceRange {
  first: number;
  last: number;
}

/** Sorted, overlapping and adjacent runs joined: 1-3, 4-6, 9-9 → 1-6, 9-9. */
export function mergeRanges(ranges: readonly SequenceRange[]): SequenceRange[] {
  const sorted = [...ranges].sort((a, b) => a.first - b.first);
  const merged: SequenceRange[] = [];
  for (const range of sorted) {
    const last = merged.at(-1);
    if (last !== undefined && range.first <= last.last + 1) last.last = Math.max(last.last, range.last);
    else merged.push({ ...range });
  }
  return merged;
}

/** The runs of a sorted list of distinct numbers: 1,2,3,7 → 1-3, 7-7. */
export function rangesOf(sortedSeqs: readonly number[]): SequenceRange[] {
  const ranges: SequenceRange[] = [];
  for (const seq of sortedSeqs) {
    const last = ranges.at(-1);
    if (last !== undefined && seq === last.last + 1) last.last = seq;
    else ranges.push({ first: seq, last: seq });
  }
  return ranges;
}

/** The numbers missing from 1 to the highest received, as runs. */
export function gapsOf(merged: readonly SequenceRange[]): SequenceRange[] {
  const gaps: SequenceRange[] = [];
  let expected = 1;
  for (const range of merged) {
    if (range.first > expected) gaps.push({ first: expected, last: range.first - 1 });
    expected = Math.max(expected, range.last + 1);
  }
  return gaps;
}

/** True when `seq` lies in one of the merged runs. */
export function covers(merged: readonly SequenceRange[], seq: number): boolean {
  let low = 0;
  let high = merged.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const range = merged[middle];
    if (seq < range.first) high = middle - 1;
    else if (seq > range.last) low = middle + 1;
    else return true;
  }
  return false;
}
