import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { SidecarToken } from './sidecar-token.entity';
import { SidecarTokensController } from './sidecar-tokens.controller';
import { SidecarTokensService } from './sidecar-tokens.service';

/** Sidecar tokens: issued, listed and revoked by admins; checked by the auth guard on the sidecar's two routes. */
@Module({
  imports: [TypeOrmModule.forFeature([SidecarToken]), AuditModule],
  controllers: [SidecarTokensController],
  providers: [SidecarTokensService],
  exports: [SidecarTokensService],
})
export class SidecarTokensModule {}
