import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';

export class ToolDefinitionView {
  @ApiProperty({ description: 'A tool’s name; `prompt:<name>` for a prompt, `template:<name>` for a resource template' }) name: string;
  @ApiProperty() description: string;
  @ApiPropertyOptional({ description: 'A tool’s JSON Schema for its arguments', type: Object, nullable: true }) inputSchema?: unknown;
  /** Every other field the model reads, as listed: title, annotations, output schema, a prompt's arguments, a template's URI template. */
  [field: string]: unknown;
}

class FieldChangeView {
  @ApiProperty({ type: Object, nullable: true }) pinned: unknown;
  @ApiProperty({ type: Object, nullable: true }) current: unknown;
}

class DefinitionDiffView {
  @ApiPropertyOptional({ type: FieldChangeView }) description?: FieldChangeView;
  @ApiPropertyOptional({ type: FieldChangeView }) inputSchema?: FieldChangeView;
  /** Any other changed field, under its name (title, annotations). */
  [field: string]: FieldChangeView | undefined;
}

export class ToolPinView {
  @ApiProperty({ description: 'The MCP server (MCP_SERVERS)' }) server: string;
  @ApiProperty() tool: string;
  @ApiProperty({ description: 'True while the server offers another definition than the pinned one: calls are denied until accepted' }) held: boolean;
  @ApiProperty({ example: '2026-11-28T10:15:30.123Z' }) pinnedAt: string;
  @ApiProperty({ nullable: true, type: String }) heldSince: string | null;
  @ApiProperty({ type: ToolDefinitionView }) pinned: ToolDefinitionView;
  @ApiProperty({ type: ToolDefinitionView, nullable: true, description: 'What the server offers now, while held' }) current: ToolDefinitionView | null;
  @ApiProperty({ type: [String], example: ['description'], description: 'What changed: description, input schema, title, annotations…' }) changes: string[];
  @ApiProperty({ type: DefinitionDiffView, description: 'Each changed field, pinned and current' }) diff: DefinitionDiffView;
}

export class ToolPinListView {
  @ApiProperty({ type: [ToolPinView] }) tools: ToolPinView[];
}

export class ToolPinQueryDto {
  @ApiPropertyOptional({ description: 'Only this server’s tools' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  server?: string;

  @ApiPropertyOptional({ enum: ['true', 'false'], description: 'Only held (true) or only pinned (false) tools' })
  @IsOptional()
  @IsIn(['true', 'false'])
  held?: 'true' | 'false';
}
