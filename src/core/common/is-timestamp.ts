import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { buildMessage, isISO8601, ValidateBy, ValidationOptions } from 'class-validator';

/** A date and time with no zone designator (`Z` or an offset). */
const ZONELESS_DATE_TIME = /^\d{4}-\d\d-\d\dT[\d:.]+$/;

/**
 * An ISO 8601 timestamp that `new Date()` reads. class-validator's IsISO8601 also passes forms
 * Date cannot read (a week `2026-W48`, an ordinal day `2026-330`, the basic format `20261125`,
 * an hour alone `2026-11-25T06`): they became an Invalid Date further on, a 500 or a 400 that
 * named no field. A date and time without a zone is read as UTC, as a date alone is: `new Date`
 * took it in the server's time zone, so instances in different zones answered differently.
 */
export function IsTimestamp(options?: ValidationOptions): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' && ZONELESS_DATE_TIME.test(value) ? `${value}Z` : value)),
    ValidateBy(
      {
        name: 'isTimestamp',
        validator: {
          validate: (value: unknown) => typeof value === 'string' && isISO8601(value, { strict: true }) && !Number.isNaN(Date.parse(value)),
          defaultMessage: buildMessage((each) => `${each}$property must be an ISO 8601 timestamp such as 2026-11-20T00:00:00Z`, options),
        },
      },
      options,
    ),
  );
}
