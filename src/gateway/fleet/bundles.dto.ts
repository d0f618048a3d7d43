import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { SIDECAR_ID_FORMAT, SIDECAR_ID_RULE } from '../../core/edge-protocol/sidecar-protocol';

/** Most entries one ingest request may carry (a sidecar sends at most 500, under 1 MiB). */
export const MAX_INGEST_ENTRIES = 1000;
export const SIDECAR_ID_MESSAGE = `sidecarId must be ${SIDECAR_ID_RULE}`;
export const AUDIT_ENTRY_ID = /^aud_[A-Za-z0-9]{1,64}$/;
/** What is wrong with an `id` that does not match AUDIT_ENTRY_ID (after the field's name). */
export const AUDIT_ENTRY_ID_PROBLEM = 'must be an audit entry id (aud_…)';
/** Longest short text (ids, names, rule) and long text (action, path, reason) an ingested entry may carry. */
export const SHORT_TEXT_MAX = 4096;
export const LONG_TEXT_MAX = 65536;

/**
 * The last millisecond of the year 9999: the trail's day partitions are named by the date, which
 * a later year cannot give (such an entry was answered 503, try again, at every retry).
 */
export const MAX_ENTRY_TS = 253_402_300_799_999;

/** One buffered decision of a sidecar: its sequence number and the audit entry's fields. */
export class IngestedEntryDto {
  @ApiProperty({ description: 'Per-sidecar sequence number, from 1, never reused', example: 1041 })
  @IsInt()
  @Min(1)
  seq: number;

  @ApiProperty({ description: 'Decision id, kept as the entry id', example: 'aud_5f0c…' })
  @IsString()
  @Matches(AUDIT_ENTRY_ID, { message: `id ${AUDIT_ENTRY_ID_PROBLEM}` })
  id: string;

  @ApiProperty({ description: 'Time of the decision, milliseconds since the epoch', maximum: MAX_ENTRY_TS })
  @IsInt()
  @Min(0)
  @Max(MAX_ENTRY_TS)
  ts: number;

  @ApiPropertyOptional({ description: 'Ignored: entries join the organization of the admin token' })
  @IsOptional()
  @IsString()
  orgId?: string;

  @ApiPropertyOptional({ description: 'Ignored: recorded as `sidecar`' })
  @IsOptional()
  @IsString()
  source?: string;

  @ApiPropertyOptional({ enum: ['decision', 'outcome'], nullable: true, default: 'decision', description: '`outcome`: an adapter’s /v1/audit event made at the edge' })
  @IsOptional()
  @IsIn(['decision', 'outcome'])
  kind?: 'decision' | 'outcome';

  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsString() @MaxLength(SHORT_TEXT_MAX) traceId?: string | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsString() @MaxLength(SHORT_TEXT_MAX) agentId?: string | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsString() @MaxLength(SHORT_TEXT_MAX) agentName?: string | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsString() @MaxLength(SHORT_TEXT_MAX) trustTier?: string | null;
  @ApiProperty() @IsString() @MaxLength(LONG_TEXT_MAX) action: string;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsString() @MaxLength(SHORT_TEXT_MAX) method?: string | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsString() @MaxLength(LONG_TEXT_MAX) path?: string | null;
  @ApiProperty({ enum: ['allow', 'deny'] }) @IsIn(['allow', 'deny']) decision: 'allow' | 'deny';
  @ApiProperty({ description: 'False when the sidecar ran in MODE=audit and let a denial through' }) @IsBoolean() enforced: boolean;
  @ApiProperty() @IsBoolean() rateLimited: boolean;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsString() @MaxLength(SHORT_TEXT_MAX) policyName?: string | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsString() @MaxLength(SHORT_TEXT_MAX) rule?: string | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsString() @MaxLength(LONG_TEXT_MAX) reason?: string | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsNumber() decisionLatencyMs?: number | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsNumber() latencyMs?: number | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsInt() status?: number | null;
  @ApiPropertyOptional({ nullable: true }) @IsOptional() @IsInt() upstreamStatus?: number | null;
  @ApiPropertyOptional({ type: [String], nullable: true }) @IsOptional() @IsArray() @IsString({ each: true }) delegationChain?: string[] | null;
  @ApiPropertyOptional({ nullable: true, description: 'The decision input (redacted at the edge and again here)' }) @IsOptional() input?: unknown;
  @ApiPropertyOptional({ nullable: true, description: 'Outcomes: eventId, decisionId, durationMs, resultSummary. Decisions: `{alerts: [{policy, rule, reason}]}`, the alert rules that fired (the gateway raises their alerts)' }) @IsOptional() details?: unknown;
}

export class AuditIngestDto {
  @ApiProperty({ description: 'The sidecar id (its X-Sidecar-Id)', example: 'sc_edge-eu-1' })
  @IsString()
  @Matches(SIDECAR_ID_FORMAT, { message: SIDECAR_ID_MESSAGE })
  sidecarId: string;

  @ApiProperty({ type: [IngestedEntryDto], maxItems: MAX_INGEST_ENTRIES })
  @IsArray()
  @ArrayMaxSize(MAX_INGEST_ENTRIES)
  @ValidateNested({ each: true })
  @Type(() => IngestedEntryDto)
  entries: IngestedEntryDto[];
}

export class AuditIngestResult {
  @ApiProperty({ description: 'Entries written now' }) accepted: number;
  @ApiProperty({ description: 'Entries already received before (ignored)' }) duplicates: number;
  @ApiProperty({
    description: 'Entries under a number already received with another id (a sidecar that reused numbers): written all the same, counted in the fleet status',
  })
  renumbered: number;
  @ApiProperty({ description: 'Entries of agents of another organization: not written, their numbers left as a gap' }) refused: number;
  @ApiProperty({ description: 'Highest sequence number received from this sidecar' }) lastSeq: number;
}

export class SequenceGap {
  @ApiProperty() first: number;
  @ApiProperty() last: number;
  @ApiProperty({ example: 'sidecar sc_edge-eu-1 is missing 1041-1090' }) message: string;
}

export class SidecarView {
  @ApiProperty({ example: 'sc_edge-eu-1' }) id: string;
  @ApiProperty({ nullable: true, enum: ['enforce', 'audit'] }) mode: string | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, example: { canary: 'true' }, description: 'Its SIDECAR_LABELS at its last bundle fetch (a canary rollout to labelled sidecars selects by them); {} when none' })
  labels: Record<string, string>;
  @ApiProperty({ nullable: true, type: String, description: 'Version of the bundle it last fetched' }) bundleVersion: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'When it last fetched its bundle (ISO 8601)' }) lastSync: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'When it last forwarded audit entries (ISO 8601)' }) lastIngest: string | null;
  @ApiProperty({ description: 'Highest audit sequence number received; 0 when none' }) lastSeq: number;
  @ApiProperty({ description: 'Audit entries received' }) received: number;
  @ApiProperty({ type: [SequenceGap], description: 'Sequence numbers missing below lastSeq' }) gaps: SequenceGap[];
  @ApiProperty({
    description: 'Audit sequence numbers the sidecar had used at its last bundle fetch that were not received yet: entries still in its buffer, or refused by this gateway (the sidecar’s /health shows audit.forwardError)',
  })
  unforwarded: number;
  @ApiProperty({
    description: 'Entries received under a number already received with another id (written to the trail); above 0, the sidecar reused numbers and gaps alone do not show every missing entry',
  })
  renumbered: number;
}

export class SidecarListView {
  @ApiProperty({ type: [SidecarView] }) sidecars: SidecarView[];
}

export const SIDECAR_MODES = ['enforce', 'audit'] as const;

/** A sidecar asking for its grant: its id and its two public keys (docs/security.md "Sidecars"). */
export class SidecarGrantDto {
  @ApiProperty({ example: 'edge-eu-1', description: SIDECAR_ID_RULE })
  @IsString()
  @Matches(SIDECAR_ID_FORMAT, { message: SIDECAR_ID_MESSAGE })
  sidecarId: string;

  @ApiProperty({ description: 'Ed25519 public JWK (kty OKP, crv Ed25519, x) its decision tokens are signed with', example: { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' } })
  @IsObject()
  signingKey: Record<string, unknown>;

  @ApiProperty({ description: 'X25519 public JWK (kty OKP, crv X25519, x) its edge credentials are sealed to', example: { kty: 'OKP', crv: 'X25519', x: 'hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo' } })
  @IsObject()
  sealingKey: Record<string, unknown>;
}

export class SealedEdgeCredentialView {
  @ApiProperty({ example: 'cred_3f9a0c1b2d4e5f6a7b8c9d0e' }) id: string;
  @ApiProperty({ example: 1 }) version: number;
  @ApiProperty({ description: '`{kind: "proxy", prefix}` or `{kind: "mcp", server}`', example: { kind: 'proxy', prefix: 'payments' } }) route: Record<string, unknown>;
  @ApiProperty({ description: '`{type: "header"|"query", name}` or `{type: "bearer"}`', example: { type: 'header', name: 'X-Api-Key' } }) placement: Record<string, unknown>;
  @ApiProperty({ description: 'The value sealed to the sidecar’s X25519 key: base64url of ephemeral key ‖ iv ‖ tag ‖ ciphertext' }) sealed: string;
}

export class EdgeGrantView {
  @ApiProperty({ example: 'edge-eu-1' }) sidecarId: string;
  @ApiProperty({ example: 'org_default' }) orgId: string;
  @ApiProperty({ description: 'JWT (typ sidecar-key+jwt) of the gateway’s key certifying the sidecar’s signing key; its decision tokens carry it as `sck`' }) certificate: string;
  @ApiProperty({ example: '2026-12-02T10:00:00.000Z' }) expiresAt: string;
  @ApiProperty({ type: [SealedEdgeCredentialView] }) credentials: SealedEdgeCredentialView[];
}
