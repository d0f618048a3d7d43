import { Body, Controller, Get, Header, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../../core/common/auth-decorators';
import { ApprovalLinks, LinkVerb } from './approval-links';
import type { ApprovalView } from './approvals.dto';
import { ApprovalsService } from './approvals.service';

/**
 * The pages the links of an approval's notification open (docs/approvals.md): a GET shows the
 * request and a button (chat services fetch links for previews: a GET must change nothing); the
 * button's POST decides, once, if the link's signature holds and the approval is still pending.
 */
@ApiExcludeController()
@Public()
@Controller('approvals')
export class ApprovalLinksController {
  constructor(
    private readonly links: ApprovalLinks,
    private readonly approvals: ApprovalsService,
  ) {}

  @Get(':id/:verb')
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-store')
  async confirm(@Param('id') id: string, @Param('verb') verb: string, @Query('expires') expires: string, @Query('token') token: string): Promise<string> {
    const checked = await this.checked(id, verb, expires, token);
    if (!checked.ok) return page('This link cannot be used', checked.problem);
    const form = `<form method="post"><input type="hidden" name="expires" value="${escape(expires)}"><input type="hidden" name="token" value="${escape(token)}"><label>Comment <input name="comment" maxlength="1000"></label> <button type="submit">${verb === 'approve' ? 'Approve' : 'Reject'}</button></form>`;
    return page(`${verb === 'approve' ? 'Approve' : 'Reject'} this request?`, `${escape(checked.description)}${form}`);
  }

  @Post(':id/:verb')
  @HttpCode(200)
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-store')
  async act(@Param('id') id: string, @Param('verb') verb: string, @Body() sent: Record<string, unknown> | undefined): Promise<string> {
    // A POST without a form body (or with another type) has no body to read: the link is then not valid.
    const body = typeof sent === 'object' && sent !== null ? sent : {};
    const expires = typeof body.expires === 'string' ? body.expires : '';
    const token = typeof body.token === 'string' ? body.token : '';
    const checked = await this.checked(id, verb, expires, token);
    if (!checked.ok) return page('This link cannot be used', checked.problem);
    const orgId = await this.approvals.orgOf(id);
    const comment = typeof body.comment === 'string' && body.comment !== '' ? body.comment.slice(0, 1000) : undefined;
    try {
      const decided = await this.approvals.decide({ orgId: orgId!, tokenId: 'approval link' }, id, verb === 'approve' ? 'approved' : 'rejected', comment);
      return page(decided.status === 'approved' ? 'Approved' : 'Rejected', `The request ${escape(heldRequest(decided))} of ${escape(decided.agentName)} is ${decided.status}.`);
    } catch (error) {
      return page('This link cannot be used', escape((error as Error).message));
    }
  }

  /** A description of the approval when the link is good for it, else why not. */
  private async checked(id: string, verb: string, expires: string, token: string): Promise<{ ok: true; description: string } | { ok: false; problem: string }> {
    if (verb !== 'approve' && verb !== 'reject') return { ok: false, problem: 'Unknown action.' };
    if (!(await this.links.verify(id, verb as LinkVerb, Number(expires), token ?? ''))) return { ok: false, problem: 'The link is not valid, or has expired.' };
    const orgId = await this.approvals.orgOf(id);
    if (orgId === null) return { ok: false, problem: 'No such approval.' };
    const approval = await this.approvals.get(orgId, id);
    if (approval.status !== 'pending') return { ok: false, problem: `This approval is ${approval.status}: it can no longer be decided.` };
    return { ok: true, description: `${approval.agentName} asks to ${heldRequest(approval)}: ${approval.reason} (policy ${approval.policy}; expires ${approval.expiresAt}).` };
  }
}

/** What the request does, as the upstream sees it: its method and path first, then the action it was decided on. */
function heldRequest(approval: ApprovalView): string {
  const actions = approval.derivedAction === null ? approval.action : `${approval.action}, derived ${approval.derivedAction}`;
  return approval.method === null ? actions : `${approval.method} ${approval.path ?? ''} (action ${actions})`;
}

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escape(title)}</title></head><body><h1>${escape(title)}</h1><p>${body}</p></body></html>`;
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}
