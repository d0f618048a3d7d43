import { buildMessage, isISO8601, ValidateBy, ValidationOptions } from 'class-validator';

/**
 * An ISO 8601 timestamp that `new Date()` reads. class-validator's IsISO8601 also passes forms
 * Date cannot read (a week `2026-W48`, an ordinal day `2026-330`, the basic format `20261125`,
 * an hour alone `2026-11-25T06`): they became an Invalid Date further on, a 500 or a 400 that
 * named no field.
 */
export function IsTimestamp(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isTimestamp',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && isISO8601(value, { strict: true }) && !Number.isNaN(Date.parse(value)),
        defaultMessage: buildMessage((each) => `${each}$property must be an ISO 8601 timestamp such as 2026-11-20T00:00:00Z`, options),
      },
    },
    options,
  );
}
