import { useCallback, useEffect, useState } from 'react';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  /** Loads again (after a change the page made). */
  reload(): void;
}

/**
 * Runs `load` when `deps` change and keeps its answer or its error; a load overtaken by a newer
 * one is aborted and its answer dropped, so a fast period switch never shows stale numbers.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((previous) => ({ ...previous, loading: true }));
    load(controller.signal).then(
      (data) => controller.signal.aborted || setState({ data, loading: false }),
      (error: unknown) => controller.signal.aborted || setState({ error: error instanceof Error ? error : new Error(String(error)), loading: false }),
    );
    return () => controller.abort();
    // `load` is a new closure on every render; `deps` say when it means something new.
  }, [...deps, generation]);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}
