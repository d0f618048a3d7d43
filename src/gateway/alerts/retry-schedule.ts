import Denque from 'denque';

/** Something to run again later. */
export interface Retryable {
  /** When it is due (ms since the epoch); set by RetrySchedule. */
  dueAt: number;
  retry(): void;
}

interface Level<T> {
  waiting: Denque<T>;
  timer: NodeJS.Timeout | null;
}

/**
 * Retries waiting for their backoff: one queue per backoff level (the wait after a first failed
 * attempt, after a second, ...). Every entry of a level waits the same delay, so each queue is
 * in due order and needs a single timer: scheduling and running a retry are O(1), whatever
 * the number waiting, with no timer or promise per retry.
 */
export class RetrySchedule<T extends Retryable> {
  private readonly levels: Array<Level<T>>;

  /** `delaysMs[i]`: the wait of level i. */
  constructor(private readonly delaysMs: readonly number[]) {
    this.levels = delaysMs.map(() => ({ waiting: new Denque<T>(), timer: null }));
  }

  /** Runs `item.retry()` once the delay of `level` has passed. */
  schedule(item: T, level: number, nowMs = Date.now()): void {
    const entry = this.levels[level];
    item.dueAt = nowMs + this.delaysMs[level];
    entry.waiting.push(item);
    if (entry.timer === null) this.arm(level, this.delaysMs[level]);
  }

  /** Drops every waiting retry and its timers. */
  clear(): void {
    for (const entry of this.levels) {
      if (entry.timer !== null) clearTimeout(entry.timer);
      entry.timer = null;
      entry.waiting.clear();
    }
  }

  private arm(level: number, delayMs: number): void {
    this.levels[level].timer = setTimeout(() => this.runDue(level), Math.max(0, delayMs));
  }

  private runDue(level: number): void {
    const entry = this.levels[level];
    entry.timer = null;
    const now = Date.now();
    let next = entry.waiting.peekFront();
    while (next !== undefined && next.dueAt <= now) {
      entry.waiting.shift();
      next.retry();
      next = entry.waiting.peekFront();
    }
    if (next !== undefined && entry.timer === null) this.arm(level, next.dueAt - now);
  }
}

/**
 * Retries that each wait their own delay (a receiver's Retry-After): a timer each, which is fine
 * for the deliveries a throttling receiver holds back, and keeps RetrySchedule's queues in order.
 */
export class DelayedRetries<T extends Retryable> {
  private readonly timers = new Set<NodeJS.Timeout>();

  /** Runs `item.retry()` once `delayMs` has passed. */
  schedule(item: T, delayMs: number, nowMs = Date.now()): void {
    item.dueAt = nowMs + delayMs;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      item.retry();
    }, delayMs);
    this.timers.add(timer);
  }

  /** Drops every waiting retry and its timer. */
  clear(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
