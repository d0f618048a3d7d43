import { Retryable, RetrySchedule } from './retry-schedule';

describe('RetrySchedule', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  const item = (name: string, ran: string[]): Retryable => ({ dueAt: 0, retry: () => ran.push(`${name}@${Date.now()}`) });

  it('runs each retry once its level’s delay has passed, in order, with one timer per level', () => {
    const ran: string[] = [];
    const schedule = new RetrySchedule<Retryable>([500, 1000]);
    schedule.schedule(item('a', ran), 0);
    jest.advanceTimersByTime(200);
    schedule.schedule(item('b', ran), 0);
    schedule.schedule(item('c', ran), 1);
    expect(jest.getTimerCount()).toBe(2);
    jest.advanceTimersByTime(2000);
    expect(ran).toEqual(['a@500', 'b@700', 'c@1200']);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('clear drops what waits', () => {
    const ran: string[] = [];
    const schedule = new RetrySchedule<Retryable>([500]);
    schedule.schedule(item('a', ran), 0);
    schedule.clear();
    jest.advanceTimersByTime(1000);
    expect(ran).toEqual([]);
  });
});
