import { call } from './http-client';

/** One line of the Prometheus text format: a metric's name, labels and value. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of an exposition (comment lines left out). */
export function parseExposition(text: string): PromSample[] {
  const samples: PromSample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) continue;
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[name] = value;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the sample named `name` whose labels are exactly `labels`; undefined when there is none. */
export function sampleValue(samples: PromSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels);
  const found = samples.find((sample) => sample.name === name && Object.keys(sample.labels).length === wanted.length && wanted.every(([key, value]) => sample.labels[key] === value));
  return found?.value;
}

/** GET /metrics at `baseUrl`, parsed; fails unless it answers 200 in the Prometheus text format. */
export async function scrape(baseUrl: string, headers: Record<string, string> = {}): Promise<PromSample[]> {
  const response = await call(baseUrl, 'GET', '/metrics', { headers, timeoutMs: 10_000 });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(response.text);
}
