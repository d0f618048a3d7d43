import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { MAX_SESSION_ID_LENGTH } from '../../core/decision/session-id';

const SESSION_ID = /^[A-Za-z0-9._:-]*$/;
const SESSION_ID_MESSAGE = 'sessionId must be characters of A-Z a-z 0-9 . _ : -';
export const LABEL_SCOPES = ['session', 'agent'] as const;
/** Most calls one timeline answer lists. */
export const MAX_TIMELINE_CALLS = 1000;

export class ClearLabelsDto {
  @ApiProperty({ description: 'The agent whose labels end' })
  @IsString()
  @MaxLength(128)
  agentId: string;

  @ApiProperty({ enum: LABEL_SCOPES, description: '`session`: the labels of one session of the agent; `agent`: the labels on the agent itself (`scope: agent` rules), in every session' })
  @IsIn(LABEL_SCOPES)
  scope: (typeof LABEL_SCOPES)[number];

  @ApiPropertyOptional({ description: 'With `scope: session`: the session; absent or empty, the agent’s own scope (its calls that name no session)', maxLength: MAX_SESSION_ID_LENGTH })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_SESSION_ID_LENGTH)
  @Matches(SESSION_ID, { message: SESSION_ID_MESSAGE })
  sessionId?: string;
}

export class ClearedLabelsView {
  @ApiProperty()
  agentId: string;

  @ApiProperty({ enum: LABEL_SCOPES })
  scope: string;

  @ApiProperty({ nullable: true, type: String, description: 'The session, `` for the agent’s own scope; null for `scope: agent`' })
  sessionId: string | null;

  @ApiProperty({ description: 'Whether this gateway instance held such labels; every instance ends them (the change is published to all)' })
  cleared: boolean;
}

export class TimelineQueryDto {
  @ApiProperty({ description: 'The agent the session belongs to' })
  @IsString()
  @MaxLength(128)
  agentId: string;

  @ApiPropertyOptional({ description: 'The session; absent or empty, the agent’s own scope', maxLength: MAX_SESSION_ID_LENGTH })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_SESSION_ID_LENGTH)
  @Matches(SESSION_ID, { message: SESSION_ID_MESSAGE })
  sessionId?: string;

  @ApiPropertyOptional({ description: 'Earliest call, ISO 8601; default 24 hours ago', example: '2026-11-20T00:00:00.000Z' })
  @IsOptional()
  @IsString()
  @Matches(/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?$/, { message: 'from must be an ISO 8601 time' })
  from?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_TIMELINE_CALLS, default: 200 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_TIMELINE_CALLS)
  limit?: number;
}

export class TimelineCallView {
  @ApiProperty({ description: 'The decision’s audit entry id' })
  id: string;

  @ApiProperty()
  timestamp: string;

  @ApiProperty({ description: 'Where it was decided: proxy, pdp, mcp, sidecar, …' })
  source: string;

  @ApiProperty()
  action: string;

  @ApiProperty({ enum: ['allow', 'deny'] })
  decision: string;

  @ApiProperty({ nullable: true, type: String })
  policy: string | null;

  @ApiProperty({ nullable: true, type: String })
  rule: string | null;

  @ApiProperty({ nullable: true, type: String })
  reason: string | null;

  @ApiProperty({ type: [String], description: 'The session’s labels the decision read' })
  labels: string[];

  @ApiProperty({ type: [String], description: 'The agent’s labels the decision read' })
  agentLabels: string[];

  @ApiProperty({ type: [String], description: 'Labels the call added' })
  labelsAdded: string[];

  @ApiProperty({ nullable: true, type: Number, description: 'What the call reserved of its budgets' })
  reserved: number | null;

  @ApiProperty({ nullable: true, type: String, description: 'The budget that refused the call, e.g. `100/1d per_agent budget`' })
  budget: string | null;
}

export class SessionTimelineView {
  @ApiProperty()
  agentId: string;

  @ApiProperty({ description: 'The session, `` for the agent’s own scope' })
  sessionId: string;

  @ApiProperty({ type: [String], description: 'The session’s labels now, as this instance remembers them' })
  labels: string[];

  @ApiProperty({ type: [String], description: 'The agent’s labels now' })
  agentLabels: string[];

  @ApiProperty({ type: [TimelineCallView], description: 'Its calls, oldest first' })
  calls: TimelineCallView[];

  @ApiProperty({ description: 'More calls follow the last one listed (ask again with a later `from`)' })
  truncated: boolean;
}
