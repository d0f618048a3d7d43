import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent, type ReactNode } from 'react';

/** Where the gateway serves the dashboard; client-side routes live below it. */
export const BASE_PATH = '/dashboard';

const NAVIGATED = 'dashboard:navigate';

export interface Route {
  /** The path below BASE_PATH, always starting with '/': '/', '/agents/agent_x'. */
  path: string;
  query: URLSearchParams;
}

function subscribe(onChange: () => void): () => void {
  window.addEventListener('popstate', onChange);
  window.addEventListener(NAVIGATED, onChange);
  return () => {
    window.removeEventListener('popstate', onChange);
    window.removeEventListener(NAVIGATED, onChange);
  };
}

const snapshot = (): string => window.location.pathname + window.location.search;

/** The current route, re-rendering on every navigation (links, back and forward). */
export function useRoute(): Route {
  const location = useSyncExternalStore(subscribe, snapshot);
  const url = new URL(location, window.location.origin);
  const below = url.pathname.startsWith(BASE_PATH) ? url.pathname.slice(BASE_PATH.length) : url.pathname;
  return { path: below === '' ? '/' : below.replace(/\/+$/, '') || '/', query: url.searchParams };
}

/** Goes to `to` (a path below BASE_PATH, with its query) without reloading the page. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = BASE_PATH + (to.startsWith('/') ? to : `/${to}`);
  if (options.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  window.dispatchEvent(new Event(NAVIGATED));
}

/** A path with a query built from `params`, leaving out empty ones. */
export function withQuery(path: string, params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') query.set(name, value);
  const text = query.toString();
  return text === '' ? path : `${path}?${text}`;
}

interface LinkProps extends Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'> {
  to: string;
  children: ReactNode;
}

/** A real link (it opens in a new tab, it can be copied) that navigates in place on a plain click. */
export function Link({ to, children, onClick, ...rest }: LinkProps) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a href={BASE_PATH + to} onClick={follow} {...rest}>
      {children}
    </a>
  );
}
