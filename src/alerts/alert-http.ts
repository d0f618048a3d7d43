import { Agent, request } from 'undici';
import { AlertSendError } from './alert-provider';

/** Time allowed for one attempt's answer. */
const ATTEMPT_TIMEOUT_MS = 10_000;

/** Keep-alive connections to alert receivers, shared by the HTTP providers of one process. */
export function alertHttpAgent(): Agent {
  return new Agent({ connections: 8, keepAliveTimeout: 30_000, headersTimeout: ATTEMPT_TIMEOUT_MS, bodyTimeout: ATTEMPT_TIMEOUT_MS });
}

/** POSTs `body`; resolves on a 2xx, else throws AlertSendError with the status. */
export async function postAlert(agent: Agent, url: string, body: string, headers: Record<string, string>): Promise<void> {
  let response;
  try {
    response = await request(url, { method: 'POST', body, headers, dispatcher: agent });
  } catch (error) {
    throw new AlertSendError(`POST ${safeUrl(url)} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  await response.body.dump();
  if (response.statusCode < 200 || response.statusCode >= 300) throw new AlertSendError(`POST ${safeUrl(url)} answered ${response.statusCode}`, response.statusCode);
}

/** A URL fit for logs and the CLI: no credentials, no query (webhook URLs often carry their secret there). */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.length > 1 ? maskPath(parsed.pathname) : parsed.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

// Chat incoming-webhook URLs are secrets in their path (/services/T000/B000/XXXX): show the first segment only.
function maskPath(pathname: string): string {
  const [first, ...rest] = pathname.split('/').filter((segment) => segment !== '');
  return rest.length === 0 ? `/${first}` : `/${first}/***`;
}
