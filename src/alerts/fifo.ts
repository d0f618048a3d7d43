/**
 * A first-in first-out queue with O(1) push and shift at any length: the pipeline's requests
 * and the retry queues can hold thousands of entries when a receiver is slow, where
 * `Array.prototype.shift` may copy the whole array.
 */
export class Fifo<T> {
  private items: Array<T | undefined> = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest item, without removing it. */
  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    // Compact once the consumed half dominates: amortised O(1), memory bounded by twice the length.
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Puts `items` back at the front, in their order, ahead of what is queued. */
  unshiftAll(items: readonly T[]): void {
    if (items.length === 0) return;
    this.items = [...items, ...this.items.slice(this.head)];
    this.head = 0;
  }

  /** Removes and returns every item, oldest first. */
  drain(): T[] {
    const all = this.items.slice(this.head) as T[];
    this.items = [];
    this.head = 0;
    return all;
  }
}
