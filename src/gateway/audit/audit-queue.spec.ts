import { AuditQueue, batchRecords } from './audit-queue';

function records(queue: AuditQueue): string[][] {
  const out: string[][] = [];
  for (let batch = queue.head(); batch !== undefined; batch = queue.head()) {
    out.push(batchRecords(batch.lines));
    expect(batch.count).toBe(out[out.length - 1].length);
    queue.shift();
  }
  return out;
}

describe('AuditQueue', () => {
  it('is empty at first', () => {
    const queue = new AuditQueue(10);
    expect(queue.length).toBe(0);
    expect(queue.head()).toBeUndefined();
    expect(queue.hasFullBatch).toBe(false);
    queue.shift();
    expect(queue.length).toBe(0);
  });

  it('gives back every record, in order, in batches of at most batchSize', () => {
    const queue = new AuditQueue(3);
    const pushed = ['1\torg\ta', '2\torg\tb', '3\torg\tc', '4\torg\td', '5\torg\te'];
    for (const record of pushed) queue.push(record);
    expect(queue.length).toBe(5);
    expect(queue.hasFullBatch).toBe(true);
    expect(records(queue)).toEqual([pushed.slice(0, 3), pushed.slice(3)]);
    expect(queue.length).toBe(0);
  });

  it('keeps text that is not ASCII byte for byte', () => {
    const queue = new AuditQueue(10);
    const pushed = ['1\torg\tagent ünïcödé', '2\torg\t{"emoji":"😀","cjk":"監査"}', '3\torg\t\\N'];
    for (const record of pushed) queue.push(record);
    expect(records(queue)).toEqual([pushed]);
  });

  it('grows a batch past its first buffer, and keeps one larger than a batch may be', () => {
    const queue = new AuditQueue(1000);
    const pushed = Array.from({ length: 300 }, (_, i) => `${i}\torg\t${'x'.repeat(1000)}é`);
    const huge = `301\torg\t${'y'.repeat(17 * 1024 * 1024)}`;
    for (const record of pushed) queue.push(record);
    queue.push(huge);
    const batches = records(queue);
    expect(batches.flat()).toEqual([...pushed, huge]);
    expect(batches[batches.length - 1]).toEqual([huge]);
  });

  it('adds nothing to a batch once it is taken for writing, and keeps it until it is shifted', () => {
    const queue = new AuditQueue(10);
    queue.push('1\torg\ta');
    const taken = queue.head()!;
    queue.push('2\torg\tb');
    expect(batchRecords(taken.lines)).toEqual(['1\torg\ta']);
    expect(queue.length).toBe(2);
    // A failed write takes the same batch again.
    expect(batchRecords(queue.head()!.lines)).toEqual(['1\torg\ta']);
    queue.shift();
    expect(queue.length).toBe(1);
    expect(records(queue)).toEqual([['2\torg\tb']]);
  });

  it('dates the oldest entry queued by its batch, until that batch is shifted', async () => {
    const queue = new AuditQueue(1);
    expect(queue.oldestQueuedAtMs).toBeNull();
    const before = performance.now();
    queue.push('1\torg\ta');
    const first = queue.oldestQueuedAtMs!;
    expect(first).toBeGreaterThanOrEqual(before);
    await new Promise((resolve) => setTimeout(resolve, 5));
    queue.push('2\torg\tb');
    expect(queue.oldestQueuedAtMs).toBe(first);
    queue.head();
    expect(queue.oldestQueuedAtMs).toBe(first);
    queue.shift();
    expect(queue.oldestQueuedAtMs).toBeGreaterThan(first);
    queue.shift();
    expect(queue.oldestQueuedAtMs).toBeNull();
  });

  it('reports a full batch only when one is waiting', () => {
    const queue = new AuditQueue(2);
    queue.push('1\torg\ta');
    expect(queue.hasFullBatch).toBe(false);
    queue.push('2\torg\tb');
    expect(queue.hasFullBatch).toBe(true);
  });
});

describe('AuditQueue buffer reuse', () => {
  it('writes the next batch over the last one written, never over one still queued', () => {
    const queue = new AuditQueue(2);
    queue.push('1\torg\tfirst');
    queue.push('2\torg\tsecond');
    queue.push('3\torg\tthird');
    const first = queue.head()!;
    queue.shift();
    const waiting = queue.head()!;
    queue.push('4\torg\tfourth');
    queue.push('5\torg\tfifth');
    expect(batchRecords(waiting.lines)).toEqual(['3\torg\tthird']);
    expect(first.lines.buffer).not.toBe(waiting.lines.buffer);
    queue.shift();
    expect(records(queue)).toEqual([['4\torg\tfourth', '5\torg\tfifth']]);
  });
});
