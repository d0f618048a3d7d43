import { ValidationPipe } from '@nestjs/common';
import { DECORATORS } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { Matches, ValidateIf, ValidationError, ValidatorOptions } from 'class-validator';
import { AppError } from './app-error';
import { MAX_JSON_DEPTH } from './json-body-guard';

/**
 * The global ValidationPipe: DTOs only, unknown fields refused, a `null` refused wherever the
 * DTO does not document the field as nullable, every problem named by field in one 400
 * `invalid_request`.
 */
export function createValidationPipe(): ValidationPipe {
  return new DocumentedNullsValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: validationFailure,
  });
}

/**
 * class-validator's `IsOptional` skips `null` as it skips a missing field, so `{"allowedSigners":
 * null}` reached the code as a null it never expected (a 500, or a null written over a stored
 * value). A field takes `null` only where its `@ApiProperty` says `nullable: true`: what the
 * OpenAPI document (GET /docs-json) tells clients is what is checked, one schema per request.
 */
class DocumentedNullsValidationPipe extends ValidationPipe {
  protected override async validate(object: object, options?: ValidatorOptions): Promise<ValidationError[]> {
    const errors = await super.validate(object, options);
    const failed = new Set(errors.map((error) => error.property));
    return [...errors, ...undocumentedNulls(object, '', 1).filter((error) => !failed.has(error.root))];
  }
}

interface NullProblem extends ValidationError {
  /** The top-level field it is under (class-validator names its errors so). */
  root: string;
}

/** Every `null` in `instance` (a DTO) and the DTOs nested in it, at a field not documented nullable; free-form objects may hold nulls. */
function undocumentedNulls(instance: object, path: string, depth: number): NullProblem[] {
  const prototype = Object.getPrototypeOf(instance) as object | null;
  if (depth > MAX_JSON_DEPTH || prototype === null || prototype === Object.prototype || prototype === Array.prototype) return [];
  return Object.entries(instance).flatMap(([key, value]): NullProblem[] => {
    const field = path === '' ? key : `${path}.${key}`;
    const root = path === '' ? key : path.split(/[.[]/)[0];
    if (value === null) return isDocumentedNullable(prototype, key) ? [] : [nullProblem(field, root)];
    if (Array.isArray(value)) return value.flatMap((item: unknown, index) => (typeof item === 'object' && item !== null ? undocumentedNulls(item, `${field}[${index}]`, depth + 1) : []));
    return typeof value === 'object' ? undocumentedNulls(value as object, field, depth + 1) : [];
  });
}

function isDocumentedNullable(prototype: object, key: string): boolean {
  const documented = Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, prototype, key) as { nullable?: boolean } | undefined;
  return documented?.nullable === true;
}

function nullProblem(field: string, root: string): NullProblem {
  return Object.assign(new ValidationError(), { property: field, root, children: [], constraints: { isNotNull: `${field} must not be null (leave it out instead)` } });
}

/** class-validator's errors as the 400 the gateway answers: every problem named by field, in `message` and in `fields`. */
export function validationFailure(errors: ValidationError[]): AppError {
  // One message per field and problem: IsInt, Min and Max all say the same of `limit=abc`.
  const problems = unique(flatten(errors));
  return AppError.invalid(problems.map((problem) => problem.message).join('; '), { fields: problems });
}

/**
 * A field that may be left out. Unlike class-validator's `IsOptional`, a `null` is not skipped
 * but checked like any value, so `{"name": null}` is a 400 naming the field, never a null
 * written over a stored value (a 500 from a NOT NULL column, or a value lost).
 */
export const IsOmittable = () => ValidateIf((_object: object, value: unknown) => value !== undefined);

/**
 * A query parameter written as digits becomes that number; anything else stays as sent for the
 * validators to refuse. `Type(() => Number)` also took `1e2`, `0x10`, `+5` and ` 7`.
 */
export const ToWholeNumber = () => Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^[0-9]{1,15}$/.test(value) ? Number(value) : value));

// A visible character, and no control character or lone surrogate anywhere.
const DISPLAY_NAME = /^[^\p{Cc}\p{Cs}]*[^\p{Cc}\p{Cs}\s][^\p{Cc}\p{Cs}]*$/u;

/**
 * A name people read in lists, logs and alerts: not blank, no control characters (a newline
 * forges a line in a log or an alert), no lone surrogate (UTF-8 cannot carry one: it was
 * stored as U+FFFD, so the name read back was not the name sent).
 */
export const isDisplayName = (value: string): boolean => DISPLAY_NAME.test(value);

export const IsDisplayName = () =>
  Matches(DISPLAY_NAME, { message: ({ property }) => `${property} must have a visible character and no control characters or lone surrogates` });

interface FieldProblem {
  field: string;
  message: string;
}

function flatten(errors: ValidationError[], parent = ''): FieldProblem[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.entries(error.constraints ?? {}).map(([rule, message]) => ({
      field,
      message: rule === 'whitelistValidation' ? `unknown field ${field}` : prefix(field, message),
    }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

function unique(problems: FieldProblem[]): FieldProblem[] {
  const seen = new Set<string>();
  return problems.filter((problem) => {
    const key = `${problem.field}\u0000${problem.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

// class-validator messages start with the bare property name; nested ones need the full path.
function prefix(field: string, message: string): string {
  const leaf = field.split('.').pop()!;
  return message.startsWith(leaf) && field !== leaf ? `${field}${message.slice(leaf.length)}` : message;
}
