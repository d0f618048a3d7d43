import { ApiProperty } from '@nestjs/swagger';

export class ServiceInfo {
  @ApiProperty({ example: 'Agent Governance Service' }) name: string;
  @ApiProperty({ example: '1.1.0' }) version: string;
  @ApiProperty({ enum: ['enforce', 'audit'] }) mode: string;
  @ApiProperty({ example: 'http://localhost:3000/docs' }) docs: string;
}

export class DatabaseHealth {
  @ApiProperty({ enum: ['up', 'down'] }) status: string;
  @ApiProperty({ enum: ['postgres', 'embedded'] }) kind: string;
  @ApiProperty({ description: 'Round trip of SELECT 1, milliseconds', nullable: true, type: Number }) latencyMs: number | null;
}

export class HealthReport {
  @ApiProperty({ enum: ['healthy', 'unhealthy'] }) status: string;
  @ApiProperty({ example: '2026-11-21T10:15:30.123Z' }) timestamp: string;
  @ApiProperty() version: string;
  @ApiProperty({ enum: ['enforce', 'audit'] }) mode: string;
  @ApiProperty({ type: DatabaseHealth }) database: DatabaseHealth;
  @ApiProperty({ description: 'Audit entries waiting to be written' }) auditQueue: number;
}
