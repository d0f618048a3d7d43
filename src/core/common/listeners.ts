/**
 * The listeners of one in-process event. Listeners are called in the emitter's turn of the
 * event loop and must only queue their work: one that throws is reported to `onError` and
 * skipped, so a listener never fails what emitted the event.
 */
export class Listeners<T> {
  private list: ReadonlyArray<(event: T) => void> = [];

  constructor(private readonly onError: (error: unknown, event: T) => void) {}

  /** True when no one listens: emitters may skip building the event. */
  get empty(): boolean {
    return this.list.length === 0;
  }

  /** Adds a listener; returns its removal. */
  subscribe(listener: (event: T) => void): () => void {
    this.list = [...this.list, listener];
    return () => {
      this.list = this.list.filter((candidate) => candidate !== listener);
    };
  }

  emit(event: T): void {
    for (const listener of this.list) {
      try {
        listener(event);
      } catch (error) {
        this.onError(error, event);
      }
    }
  }
}
