import { covers, gapsOf, mergeRanges, rangesOf } from './sequence-ranges';

describe('sequence ranges', () => {
  it('merges overlapping and adjacent runs', () => {
    expect(mergeRanges([{ first: 9, last: 9 }, { first: 1, last: 3 }, { first: 4, last: 6 }, { first: 5, last: 7 }])).toEqual([
      { first: 1, last: 7 },
      { first: 9, last: 9 },
    ]);
  });

  it('finds the runs of a sorted list', () => {
    expect(rangesOf([1, 2, 3, 7, 9, 10])).toEqual([
      { first: 1, last: 3 },
      { first: 7, last: 7 },
      { first: 9, last: 10 },
    ]);
  });

  it('reports what is missing from 1 on, including a missing start', () => {
    expect(gapsOf(mergeRanges([{ first: 1, last: 1040 }, { first: 1091, last: 2000 }]))).toEqual([{ first: 1041, last: 1090 }]);
    expect(gapsOf([{ first: 5, last: 6 }])).toEqual([{ first: 1, last: 4 }]);
    expect(gapsOf([])).toEqual([]);
  });

  it('tells whether a number was received', () => {
    const merged = mergeRanges([{ first: 1, last: 3 }, { first: 10, last: 12 }]);
    expect([0, 1, 3, 4, 9, 10, 12, 13].map((seq) => covers(merged, seq))).toEqual([false, true, true, false, false, true, true, false]);
  });
});
