import { newId } from '../../core/common/ids';

/** docs/alerts.md "Triggers and severity". */
export type AlertSeverity = 'critical' | 'warning' | 'info';

/**
 * What raised an alert: the three ALERT_ON triggers, an `alert` rule of a policy (always on),
 * or `ags alerts test`.
 */
export type AlertTrigger = 'deny' | 'error' | 'rate_limit' | 'alert_rule' | 'approval' | 'policy_source' | 'policy_canary' | 'test';

/** The audit-entry fields an alert carries (`entry` in docs/alerts.md "The generic webhook"); `''` when unknown. */
export interface AlertEntry {
  traceId: string;
  agentId: string;
  agentName: string;
  trustTier: string;
  action: string;
  method: string;
  path: string;
  decision: string;
  policyName: string;
  reason: string;
}

/** One alert, as every provider renders it. */
export interface Alert {
  /** `alert_<hex>`: names the alert in every provider's message and in delivery logs. */
  id: string;
  /** ISO 8601. */
  timestamp: string;
  severity: AlertSeverity;
  trigger: AlertTrigger;
  title: string;
  message: string;
  entry: AlertEntry;
  /** The organization whose decision raised it (its ALERT_RATE_LIMIT budget); null or absent for failures before any decision. Not sent. */
  orgId?: string | null;
}

/** Where alerts come from: named in every message. */
export interface AlertOrigin {
  instance: string;
  environment: string;
}

/** A new alert id. */
export function newAlertId(): string {
  return newId('alert');
}

/** The clearly marked test alert of `ags alerts test`. */
export function testAlert(nowMs = Date.now()): Alert {
  return {
    id: newAlertId(),
    timestamp: new Date(nowMs).toISOString(),
    severity: 'info',
    trigger: 'test',
    title: '[TEST] Test alert from ags alerts test',
    message: 'This is a test alert sent by `ags alerts test` to check the alert configuration. No request was denied and nothing needs doing.',
    entry: {
      traceId: 'test',
      agentId: 'test',
      agentName: 'test',
      trustTier: 'test',
      action: 'test:alert',
      method: 'POST',
      path: '/test',
      decision: 'allow',
      policyName: 'test',
      reason: 'test alert',
    },
  };
}

// Line breaks and other control characters: C0, DEL, C1, and the Unicode line and paragraph separators.
// eslint-disable-next-line no-control-regex -- control characters are exactly what is matched
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const NAMED_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * `text` on one line, its control characters written as escapes (`\n`, `\u0007`): the chat
 * message and the email lay an alert out as lines of `Label: value`, and the values come from
 * callers (an adapter's action, an agent's name), who must not be able to add lines that read
 * as the alert's own (`Severity: info`). The webhook carries values as they are, in JSON.
 */
export function singleLine(text: string): string {
  return text.replace(CONTROL, (char) => NAMED_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
