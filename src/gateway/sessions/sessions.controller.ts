import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { DecisionMemory } from '../../core/decision/decision-memory';
import { SessionLabelsService } from './session-labels.service';
import { SessionTimelineService } from './session-timeline.service';
import { ClearedLabelsView, ClearLabelsDto, SessionTimelineView, TimelineQueryDto } from './sessions.dto';

@ApiTags('sessions')
@AdminAuth()
@Controller('admin/sessions')
export class SessionsController {
  constructor(
    private readonly labels: SessionLabelsService,
    private readonly timelines: SessionTimelineService,
    private readonly memory: DecisionMemory,
  ) {}

  @Get('timeline')
  @ApiOperation({ summary: 'One session of an agent as a timeline: its calls in order, with the labels each read and added, its budget, and the labels now' })
  @ApiOkResponse({ type: SessionTimelineView })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message)', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'No such agent in the organization', type: ErrorBody })
  timeline(@CurrentAdmin() admin: AdminPrincipal, @Query() query: TimelineQueryDto): Promise<SessionTimelineView> {
    return this.timelines.timeline(admin, query);
  }

  @Post('clear-labels')
  @HttpCode(200)
  @ApiOperation({ summary: 'Ends the labels of one session of an agent, or on the agent itself (audited as admin:session.labels_clear)' })
  @ApiOkResponse({ type: ClearedLabelsView })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message)', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'No such agent in the organization', type: ErrorBody })
  async clearLabels(@CurrentAdmin() admin: AdminPrincipal, @Body() body: ClearLabelsDto): Promise<ClearedLabelsView> {
    const before = await this.memory.sessionFacts(admin.orgId, body.agentId, body.sessionId ?? '', Date.now());
    const held = body.scope === 'agent' ? before.agent_labels.length > 0 : before.labels.length > 0;
    const cleared = await this.labels.clear(admin, body.agentId, body.scope, body.sessionId);
    // Every instance applies the cluster event; a memory shared in Redis is cleared here too before the answer, so the next decision anywhere reads it cleared.
    await this.memory.clearLabels(admin.orgId, cleared.agentId, cleared.sessionId ?? undefined, Date.now());
    return { ...cleared, cleared: held };
  }
}
