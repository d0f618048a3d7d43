import { Alert, AlertOrigin, AlertSeverity, singleLine } from './alert';
import { AlertHttpClient, safeUrl } from './alert-http';
import type { AlertProvider } from './alert-provider';

const SEVERITY_MARK: Record<AlertSeverity, string> = { critical: ':red_circle: CRITICAL', warning: ':warning: WARNING', info: ':information_source: INFO' };
const CHAT_HEADERS = { 'content-type': 'application/json', 'user-agent': 'Service/1.0' };
const SEVERITY_COLOR: Record<AlertSeverity, string> = { critical: '#d32f2f', warning: '#f9a825', info: '#1976d2' };

/** Slack's Block Kit limits, in characters: beyond them Slack refuses the whole message (`invalid_blocks`). */
export const CHAT_LIMITS = { header: 150, sectionText: 3000, field: 2000 } as const;
const TRUNCATED = '… (truncated)';

/**
 * Slack's mrkdwn escaping: `&`, `<` and `>` are its control characters (`<!channel>` pings the
 * channel, `<url|text>` is a link with any text), and agents control paths, actions and names.
 */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** `text` cut to `max` characters, marked as cut; never inside an escape (`&amp;`) or a surrogate pair. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text
    .slice(0, max - TRUNCATED.length)
    .replace(/&[a-z]*$/, '')
    .replace(/[\ud800-\udbff]$/, '');
  return `${cut}${TRUNCATED}`;
}

/**
 * A Slack-compatible incoming-webhook message (docs/alerts.md "Chat and email"): title, summary,
 * policy, agent with tier, decision, action, method and path, trace id, reason, instance with
 * environment. `text` is the notification fallback; the blocks carry the details.
 */
export function chatMessage(alert: Alert, origin: AlertOrigin): Record<string, unknown> {
  const { entry } = alert;
  // Values on one line (singleLine): a line break in a caller's value would read as a field of its own.
  const field = (label: string, value: string) => ({ type: 'mrkdwn', text: truncate(`*${label}*\n${value === '' ? '-' : escapeMrkdwn(singleLine(value))}`, CHAT_LIMITS.field) });
  const request = entry.method === '' && entry.path === '' ? '-' : `${entry.method} ${entry.path}`.trim();
  const title = singleLine(alert.title);
  return {
    text: `${SEVERITY_MARK[alert.severity]}: ${escapeMrkdwn(title)}`,
    attachments: [
      {
        color: SEVERITY_COLOR[alert.severity],
        blocks: [
          { type: 'header', text: { type: 'plain_text', text: truncate(title, CHAT_LIMITS.header) } },
          {
            type: 'section',
            text: { type: 'mrkdwn', text: truncate(`${SEVERITY_MARK[alert.severity]} (${alert.trigger}): ${escapeMrkdwn(singleLine(alert.message))}`, CHAT_LIMITS.sectionText) },
          },
          {
            type: 'section',
            fields: [
              field('Policy', entry.policyName),
              field('Agent', `${entry.agentName || entry.agentId} (${entry.trustTier})`),
              field('Decision', entry.decision),
              field('Action', entry.action),
              field('Request', request),
              field('Trace ID', entry.traceId),
              field('Reason', entry.reason),
              field('Instance', `${origin.instance} (${origin.environment})`),
            ],
          },
          { type: 'context', elements: [{ type: 'mrkdwn', text: escapeMrkdwn(`${alert.id} · ${alert.timestamp}`) }] },
        ],
      },
    ],
  };
}

/** A chat service's incoming webhook (ALERT_CHAT_WEBHOOK). */
export class ChatProvider implements AlertProvider {
  readonly name = 'chat';
  readonly target: string;
  private readonly parsed: URL;

  constructor(
    private readonly url: string,
    private readonly origin: AlertOrigin,
    private readonly http: AlertHttpClient,
  ) {
    this.target = safeUrl(url);
    this.parsed = new URL(url);
  }

  async send(alert: Alert): Promise<void> {
    await this.http.post(this.parsed, CHAT_HEADERS, JSON.stringify(chatMessage(alert, this.origin)));
  }

  async close(): Promise<void> {
    await this.http.close();
  }
}
