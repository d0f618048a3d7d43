import { validateSync } from 'class-validator';
import { IsTimestamp } from './is-timestamp';

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
