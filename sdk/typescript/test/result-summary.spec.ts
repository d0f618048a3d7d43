import fs from 'node:fs';
import path from 'node:path';
import { summaryOf } from '../src';
import { raisedSummary } from '../src/result-summary';
import { FIXTURES } from './support/sdk-gateway';

/**
 * The default result summary: the rule and cases every SDK shares
 * (sdk/fixtures/result-summaries.json), then the JavaScript values JSON has no word for.
 */

interface SummaryCases {
  cases: Array<{ name: string; value: unknown; summary: string }>;
}

const SHARED = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'result-summaries.json'), 'utf8')) as SummaryCases;

class Customer {
  constructor(readonly iban: string) {}
}

class LookupError extends Error {}

describe('summaryOf', () => {
  it.each(SHARED.cases.map((each) => [each.name, each.value, each.summary] as const))('the shared case: %s', (_name, value, summary) => {
    expect(summaryOf(value)).toBe(summary);
  });

  it.each([
    ['undefined', undefined, 'returned null'],
    ['a Buffer', Buffer.from('secret'), 'returned binary of 6 bytes'],
    ['an ArrayBuffer', new ArrayBuffer(1), 'returned binary of 1 byte'],
    ['a Set', new Set(['a', 'b']), 'returned list of 2 items'],
    ['a Map', new Map([['iban', 'DE89']]), 'returned object of 1 key'],
    ['an object without a prototype', Object.assign(Object.create(null) as object, { a: 1, b: 2 }), 'returned object of 2 keys'],
    ['a class instance, by its type only', new Customer('DE89370400440532013000'), 'returned Customer'],
    ['a bigint', 10n, 'returned number'],
    ['a function', () => 1, 'returned function'],
  ])('%s', (_name, value, summary) => {
    expect(summaryOf(value)).toBe(summary);
  });
});

describe('the summary of a call that threw', () => {
  it.each([
    ['an Error', new Error('token abc123 refused'), 'raised Error'],
    ['a subclass, by its class', new LookupError('no customer DE89'), 'raised LookupError'],
    ['a TypeError', new TypeError('x is not a function'), 'raised TypeError'],
    ['a thrown string, never quoted', 'password=hunter2', 'raised string'],
    ['a thrown object', { code: 7 }, 'raised object'],
  ])('%s', (_name, error, summary) => {
    expect(raisedSummary(error)).toBe(summary);
  });
});
