import { atTurnEnd } from './turn-end';

describe('atTurnEnd', () => {
  it('runs the tasks of a turn after its I/O callbacks and microtasks, in the order they were queued', async () => {
    const ran: string[] = [];
    atTurnEnd(() => ran.push('first'));
    void Promise.resolve().then(() => {
      ran.push('microtask');
      atTurnEnd(() => ran.push('second'));
    });
    ran.push('sync');
    expect(ran).toEqual(['sync']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(['sync', 'microtask', 'first', 'second']);
  });

  it('runs a task queued by a task in the same pass, and starts a new pass in a later turn', async () => {
    const ran: string[] = [];
    atTurnEnd(() => {
      ran.push('outer');
      atTurnEnd(() => ran.push('inner'));
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(['outer', 'inner']);
    atTurnEnd(() => ran.push('later'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(['outer', 'inner', 'later']);
  });
});
