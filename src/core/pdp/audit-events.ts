import { plainToInstance } from 'class-transformer';
import { ValidationError, validateSync } from 'class-validator';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { validationFailure } from '../common/validation';
import { AdapterAuditDto } from './pdp.dto';

/** The most events one `POST /v1/audit` batch carries. */
export const MAX_AUDIT_BATCH = 500;

/** A batch's eventIds: made by the SDK, kept across retries (docs/pdp.md "Batches"). */
const BATCH_EVENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** One event of a `POST /v1/audit` body, and where it sat: `''` for the single form, `events.<index>.` in a batch. */
export interface PlacedEvent {
  event: AdapterAuditDto;
  field: string;
}

/** What a `POST /v1/audit` body holds: one event (the single form) or a batch. */
export interface AuditBody {
  batch: boolean;
  events: PlacedEvent[];
}

/**
 * The body of `POST /v1/audit` checked as the gateway's ValidationPipe checks (the same messages
 * on every transport): `{events: [...]}` is a batch of 1-500 events, each named by its index in
 * every problem (`events.3.durationMs ...`), all problems of all events in one 400; anything
 * else is the single form.
 */
export function auditBodyOf(body: unknown): AuditBody {
  if (typeof body !== 'object' || body === null) throw new AppError(ErrorCode.InvalidJson, 'Request body is not valid JSON');
  if (Array.isArray(body)) throw AppError.invalid('body must be a JSON object');
  if (!('events' in body)) {
    const [problems, event] = checked(body);
    if (problems.length > 0) throw validationFailure(problems);
    return { batch: false, events: [{ event, field: '' }] };
  }
  return { batch: true, events: batchOf(body as { events: unknown }) };
}

function batchOf(body: { events: unknown }): PlacedEvent[] {
  const unknown = Object.keys(body).filter((key) => key !== 'events');
  if (unknown.length > 0) throw AppError.invalid(unknown.map((key) => `unknown field ${key}`).join('; '));
  const { events } = body;
  if (!Array.isArray(events)) throw AppError.invalid('events must be an array');
  if (events.length === 0 || events.length > MAX_AUDIT_BATCH) throw AppError.invalid(`events must hold 1 to ${MAX_AUDIT_BATCH} events, not ${events.length}`);
  const problems: ValidationError[] = [];
  const placed = events.map((sent: unknown, index): PlacedEvent => {
    const field = `events.${index}`;
    if (typeof sent !== 'object' || sent === null || Array.isArray(sent)) {
      problems.push(problem(field, `${field} must be an object`));
      return { event: sent as AdapterAuditDto, field: `${field}.` };
    }
    const [own, event] = checked(sent);
    if (own.length === 0 && (typeof event.eventId !== 'string' || !BATCH_EVENT_ID.test(event.eventId))) {
      own.push(problem('eventId', 'eventId is required in a batch: 1-64 characters of A-Z a-z 0-9 _ -'));
    }
    if (own.length > 0)
      problems.push(
        Object.assign(new ValidationError(), {
          property: field,
          constraints: {},
          children: own,
        }),
      );
    return { event, field: `${field}.` };
  });
  if (problems.length > 0) throw validationFailure(problems);
  return placed;
}

/**
 * One event checked by AdapterAuditDto's rules. `arguments` is validated as an object and then
 * kept as sent: class-transformer would drop (or trip over) `__proto__`, `constructor` and
 * `prototype` keys, which would let a caller keep an argument out of the trail.
 */
function checked(body: object): [ValidationError[], AdapterAuditDto] {
  const sent = (body as { arguments?: unknown }).arguments;
  const checkable = isPlainObject(sent) ? { ...body, arguments: {} } : body;
  const event = plainToInstance(AdapterAuditDto, checkable);
  const problems = validateSync(event, {
    whitelist: true,
    forbidNonWhitelisted: true,
  });
  return [problems, isPlainObject(sent) ? Object.assign(event, { arguments: sent }) : event];
}

function problem(property: string, message: string): ValidationError {
  return Object.assign(new ValidationError(), {
    property,
    constraints: { batch: message },
    children: [],
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
