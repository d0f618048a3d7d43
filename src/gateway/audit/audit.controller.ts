import { Controller, Get, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { AuditPage, AuditQueryDto, AuditVerification, AuditVerifyQueryDto } from './audit.dto';
import { AuditService } from './audit.service';

@ApiTags('audit')
@AdminAuth()
@ApiBadRequestResponse({ description: 'Invalid query parameter (named in the message)', type: ErrorBody })
@Controller('admin/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiOperation({ summary: 'Audit entries of the organization, newest first, paged with a cursor' })
  @ApiOkResponse({ type: AuditPage })
  list(@CurrentAdmin() admin: AdminPrincipal, @Query() query: AuditQueryDto): Promise<AuditPage> {
    return this.audit.list(admin, query);
  }

  @Get('verify')
  @ApiOperation({ summary: 'Recompute the tamper-evident hash chain and report the first broken link' })
  @ApiOkResponse({ type: AuditVerification })
  verify(@CurrentAdmin() admin: AdminPrincipal, @Query() query: AuditVerifyQueryDto): Promise<AuditVerification> {
    return this.audit.verify(admin, query.from, query.to);
  }
}
