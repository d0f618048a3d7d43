import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import path from 'node:path';
import { DataSource } from 'typeorm';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { AppConfig } from '../../core/config/app-config';
import { parseDuration } from '../../core/policy-engine/duration';
import { AuditService } from '../audit/audit.service';
import type { AdminPrincipal } from '../common/admin-principal';
import { withoutCredentials } from './git-policy-repository';
import { GitPolicySync } from './git-policy-sync';
import { PolicyGitSourceDto, PolicyGitSourceView } from './policy-git-sources.dto';

const NETWORK_SCHEMES = new Set(['https:', 'http:', 'ssh:', 'git:']);
const BRANCH = /^(?!-)(?!.*\.\.)(?!.*\/\/)[A-Za-z0-9._/-]{1,200}(?<![./])$/;
const FOLDER = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;
const MIN_POLL_MS = 1000;
const MAX_POLL_MS = 86_400_000;

interface SourceRow {
  url: string;
  branch: string;
  path: string;
  poll_ms: string | number;
  allowed_signers: string | null;
  updated_by: string;
  updated_at: Date;
}

/**
 * An organization's git source set through the admin API (docs/policies.md "Policies from
 * git"): stored per organization, followed by GitPolicySync on every instance with the same
 * rules as POLICIES_GIT_URL (a failing commit refused, the last good one in force, the API
 * refusing edits to the policies git owns). Every change is an admin audit event.
 */
@Injectable()
export class PolicyGitSourcesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sync: GitPolicySync,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
  ) {}

  /** Sets the organization's source (replacing one set before) and follows it at once: answers after its first poll. */
  async set(admin: AdminPrincipal, request: PolicyGitSourceDto): Promise<PolicyGitSourceView> {
    if (this.sync.environmentOrg === admin.orgId) throw new AppError(ErrorCode.Conflict, 'this organization’s policies follow POLICIES_GIT_URL, set by the deployment: change them there');
    const source = {
      url: this.checkedUrl(request.url),
      branch: checkedBranch(request.branch ?? 'main'),
      path: checkedFolder(request.path ?? '.'),
      pollMs: checkedPoll(request.pollInterval ?? '60s'),
      allowedSigners: checkedSigners(request.allowedSigners),
    };
    await this.dataSource.query(
      `INSERT INTO policy_git_sources (org_id, url, branch, path, poll_ms, allowed_signers, updated_by, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp())
       ON CONFLICT (org_id) DO UPDATE SET url = $2, branch = $3, path = $4, poll_ms = $5, allowed_signers = $6, updated_by = $7, updated_at = clock_timestamp()`,
      [admin.orgId, source.url, source.branch, source.path, source.pollMs, source.allowedSigners, admin.tokenId],
    );
    this.audit.recordAdminEvent(admin, { action: 'policy.git.set', details: { url: withoutCredentials(source.url), branch: source.branch, path: source.path, pollMs: source.pollMs, signed: source.allowedSigners !== null } });
    await this.sync.reconcile();
    return this.get(admin);
  }

  /** The organization's source with where it stands on this instance; 404 when none is set. */
  async get(admin: AdminPrincipal): Promise<PolicyGitSourceView> {
    const rows: SourceRow[] = await this.dataSource.query('SELECT url, branch, path, poll_ms, allowed_signers, updated_by, updated_at FROM policy_git_sources WHERE org_id = $1', [admin.orgId]);
    if (rows.length === 0) throw new AppError(ErrorCode.NotFound, 'this organization has no git source (PUT /admin/policy-git sets one)');
    const [row] = rows;
    const status = this.sync.statusOf(admin.orgId);
    return {
      url: withoutCredentials(row.url),
      branch: row.branch,
      path: row.path,
      pollMs: Number(row.poll_ms),
      signed: row.allowed_signers !== null,
      updatedBy: row.updated_by,
      updatedAt: new Date(row.updated_at).toISOString(),
      commit: status?.commit ?? null,
      appliedAt: status?.appliedAt ?? null,
      checkedAt: status?.checkedAt ?? null,
      error: status?.error ?? null,
    };
  }

  /** Stops following git: the policies it put in force stay, and the API may change them again. */
  async remove(admin: AdminPrincipal): Promise<void> {
    const removed: Array<{ org_id: string }> = await this.dataSource.query('DELETE FROM policy_git_sources WHERE org_id = $1 RETURNING org_id', [admin.orgId]);
    if (removed.length === 0) throw new AppError(ErrorCode.NotFound, 'this organization has no git source');
    await this.sync.reconcile();
    await this.dataSource.query(`UPDATE policies SET origin = 'api' WHERE org_id = $1 AND origin = 'git'`, [admin.orgId]);
    this.audit.recordAdminEvent(admin, { action: 'policy.git.remove', details: {} });
  }

  /** A network URL, or a local path (`file://` too) under POLICIES_GIT_LOCAL_ROOT: anything else is a 400 naming why. */
  private checkedUrl(url: string): string {
    const text = url.trim();
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
      let parsed: URL;
      try {
        parsed = new URL(text);
      } catch {
        throw AppError.invalid(`url ${JSON.stringify(withoutCredentials(text))} is not a URL`);
      }
      if (NETWORK_SCHEMES.has(parsed.protocol)) return text;
      if (parsed.protocol !== 'file:') throw AppError.invalid(`url: ${parsed.protocol} is not taken (https://, http://, ssh://, git://, or a local path under POLICIES_GIT_LOCAL_ROOT)`);
      return `file://${this.localPath(decodeURIComponent(parsed.pathname))}`;
    }
    if (text.startsWith('-') || /^[^/]+:/.test(text)) throw AppError.invalid('url must be an https://, http://, ssh:// or git:// URL (an scp-like user@host:path is written ssh://user@host/path), or a local path');
    return this.localPath(text);
  }

  private localPath(given: string): string {
    const root = this.config.policies.gitLocalRoot;
    if (root === undefined) throw AppError.invalid('url: a local path reads the gateway’s own disk, which this deployment does not allow (POLICIES_GIT_LOCAL_ROOT is not set): give a network URL');
    if (!path.isAbsolute(given)) throw AppError.invalid('url: a local path must be absolute');
    const resolved = path.resolve(given);
    if (resolved !== root && !resolved.startsWith(root.endsWith(path.sep) ? root : root + path.sep)) throw AppError.invalid(`url: a local path must be under POLICIES_GIT_LOCAL_ROOT (${root})`);
    return resolved;
  }
}

function checkedBranch(branch: string): string {
  if (!BRANCH.test(branch) || branch.endsWith('.lock')) throw AppError.invalid(`branch ${JSON.stringify(branch)} is not a branch name (letters, digits, . _ / -; no "..", not starting with -)`);
  return branch;
}

function checkedFolder(folder: string): string {
  const trimmed = folder.replace(/^\/+|\/+$/g, '');
  if (trimmed === '' || trimmed === '.') return '.';
  if (!FOLDER.test(trimmed) || trimmed.split('/').some((part) => part === '..' || part === '.')) throw AppError.invalid(`path ${JSON.stringify(folder)} is not a folder of the repository (letters, digits, . _ - separated by /; no . or .. parts)`);
  return trimmed;
}

function checkedPoll(text: string): number {
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch {
    throw AppError.invalid(`pollInterval ${JSON.stringify(text)} is not a duration such as 30s, 5m or 1h`);
  }
  if (ms < MIN_POLL_MS || ms > MAX_POLL_MS) throw AppError.invalid('pollInterval must be from 1s to 1d');
  return ms;
}

function checkedSigners(text: string | undefined): string | null {
  if (text === undefined) return null;
  if (text.trim() === '') throw AppError.invalid('allowedSigners is empty: leave it out for unsigned commits, or give the allowed-signers file’s text');
  if (text.includes('\0')) throw AppError.invalid('allowedSigners holds a NUL character');
  return text.endsWith('\n') ? text : `${text}\n`;
}
