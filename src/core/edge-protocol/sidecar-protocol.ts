/*
 * What a sidecar and the gateway agree on, beside the bundle format (bundle-format.ts): the
 * headers of a bundle fetch and the form of a sidecar's id.
 */

/** A sidecar's id, as the gateway's ingest and fleet status take it. */
export const SIDECAR_ID_FORMAT = /^[A-Za-z0-9._:-]{1,128}$/;
export const SIDECAR_ID_RULE = '1-128 letters, digits, or . _ : -';

/** Headers a sidecar sends with its bundle fetch, so the fleet status knows it. */
export enum SidecarHeader {
  Id = 'X-Sidecar-Id',
  Mode = 'X-Sidecar-Mode',
  /** The highest audit sequence number the sidecar has used. */
  AuditSeq = 'X-Sidecar-Audit-Seq',
  /** The sidecar's labels (SIDECAR_LABELS), `name=value` pairs: a canary rollout to labelled sidecars reaches only the bundles of those it selects. */
  Labels = 'X-Sidecar-Labels',
  BundleVersion = 'X-Bundle-Version',
}

/**
 * A sidecar's labels (SIDECAR_LABELS, sent with every bundle fetch as X-Sidecar-Labels): what a
 * canary rollout to labelled sidecars selects by (docs/policies.md "Canary rollouts"). Written
 * `name=value,name=value`; names and values as Kubernetes labels have them.
 */
export type SidecarLabels = Readonly<Record<string, string>>;

export const SIDECAR_LABEL_NAME = /^[A-Za-z0-9]([A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?$/;
export const SIDECAR_LABEL_VALUE = /^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$/;
export const MAX_SIDECAR_LABELS = 16;
export const SIDECAR_LABELS_RULE = `at most ${MAX_SIDECAR_LABELS} name=value pairs, separated by commas; a name of 1-63 letters, digits or . _ / - (starting and ending with a letter or digit), a value of 0-63 letters, digits or . _ -`;

/** The labels of `name=value,name=value` text, or why it is not such a text. */
export function parseSidecarLabels(text: string): { labels: SidecarLabels } | { problem: string } {
  const labels: Record<string, string> = {};
  const pairs = text.trim() === '' ? [] : text.split(',');
  if (pairs.length > MAX_SIDECAR_LABELS) return { problem: `more than ${MAX_SIDECAR_LABELS} labels` };
  for (const pair of pairs) {
    const equals = pair.indexOf('=');
    if (equals < 0) return { problem: `${JSON.stringify(pair.trim())} is not name=value` };
    const name = pair.slice(0, equals).trim();
    const value = pair.slice(equals + 1).trim();
    if (!SIDECAR_LABEL_NAME.test(name)) return { problem: `label name ${JSON.stringify(name)} is not 1-63 letters, digits or . _ / -` };
    if (!SIDECAR_LABEL_VALUE.test(value)) return { problem: `value of label ${name} (${JSON.stringify(value)}) is not 0-63 letters, digits or . _ -` };
    if (Object.hasOwn(labels, name)) return { problem: `label ${name} is given twice` };
    labels[name] = value;
  }
  return { labels };
}

/** The labels as X-Sidecar-Labels carries them: `name=value` pairs sorted by name. */
export function sidecarLabelsText(labels: SidecarLabels): string {
  return Object.keys(labels)
    .sort()
    .map((name) => `${name}=${labels[name]}`)
    .join(',');
}

/** Whether a sidecar carrying `labels` is selected by `selector`: it carries every label of the selector, with the same value. */
export function labelsMatch(selector: SidecarLabels, labels: SidecarLabels): boolean {
  return Object.entries(selector).every(([name, value]) => Object.hasOwn(labels, name) && labels[name] === value);
}
