import type { ReactNode } from 'react';
import type { Loaded } from '../load';
import { ErrorMessage } from './error-message';

/** The loading note, the error, or what `render` makes of the data. */
export function LoadedView<T>({ loaded, what, children }: { loaded: Loaded<T>; what: string; children: (data: T) => ReactNode }) {
  if (loaded.error) return <ErrorMessage error={loaded.error} title={`Could not load ${what}`} />;
  if (loaded.data === undefined)
    return (
      <p className="muted" role="status">
        Loading {what}…
      </p>
    );
  return <>{children(loaded.data)}</>;
}
