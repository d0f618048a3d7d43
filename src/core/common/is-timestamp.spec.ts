import { validateSync } from 'class-validator';
import { IsTimestamp } from './is-timestamp';
import { createValidationPipe } from './validation';

class Query {
  @IsTimestamp()
  from: unknown;
}

function problems(from: unknown): string[] {
  const query = Object.assign(new Query(), { from });
  return validateSync(query).flatMap((error) => Object.values(error.constraints ?? {}));
}

describe('IsTimestamp', () => {
  it.each(['2026-11-20', '2026-11-20T00:00:00Z', '2026-11-20T10:15:30.123+05:30', '2026-11-20T10:15'])('accepts %s', (value) => {
    expect(problems(value)).toEqual([]);
  });

  it.each(['2026-W48', '2026-W48-3', '2026-330', '20261125', '2026-11-25T06', '2026-11-25T06:00:00,5Z', '2026-02-30', 'yesterday', '', 42, null])(
    'refuses %p, naming the field',
    (value) => {
      expect(problems(value)).toEqual(['from must be an ISO 8601 timestamp such as 2026-11-20T00:00:00Z']);
    },
  );
});

describe('IsTimestamp without a time zone', () => {
  // Date-only forms are UTC to `new Date`; date-times without an offset were the server's local
  // time (TZ), so two instances in different zones answered the same query differently.
  it.each([
    ['2026-11-20T10:15', '2026-11-20T10:15Z'],
    ['2026-11-20T10:15:30', '2026-11-20T10:15:30Z'],
    ['2026-11-20T10:15:30.123', '2026-11-20T10:15:30.123Z'],
    ['2026-11-20', '2026-11-20'],
    ['2026-11-20T10:15:30+05:30', '2026-11-20T10:15:30+05:30'],
    ['2026-11-20T10:15:30z', '2026-11-20T10:15:30z'],
  ])('reads %s as UTC, whatever the server time zone', async (value, read) => {
    const query = (await createValidationPipe().transform({ from: value }, { type: 'query', metatype: Query })) as Query;
    expect(query.from).toBe(read);
  });
});
