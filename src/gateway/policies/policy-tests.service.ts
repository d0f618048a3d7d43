import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { AuditService } from '../audit/audit.service';
import { compilePolicies } from '../../core/policy-engine/compile-policies';
import { PolicyLoadError } from '../../core/policy-engine/errors';
import { loadPolicyTests, PolicyTestSuite, runPolicyTests } from '../../core/policy-engine/policy-tests';
import type { PolicyDefinition } from '../../core/policy-engine/types';
import { invalidPolicy } from './policy-errors';
import { PolicyTestFailureView, PolicyTestFileListView, PolicyTestFileView, PolicyTestRunView } from './policies.dto';
import { Policy } from './policy.entity';
import { PolicyTestFile } from './policy-test.entity';

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Stored test files an organization may keep: each policy change runs all of them, so their number is bounded. */
export const MAX_STORED_TEST_FILES = 50;

/**
 * An organization's stored policy tests (docs/policies.md "Tests in files"): kept beside its
 * policies, run by the engine against what a policy change would put in force.
 */
@Injectable()
export class PolicyTestsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  async list(principal: AdminPrincipal): Promise<PolicyTestFileListView> {
    const files = await this.dataSource.getRepository(PolicyTestFile).find({ where: { orgId: principal.orgId }, order: { name: 'ASC' } });
    return { files: files.map(toView) };
  }

  async get(principal: AdminPrincipal, name: string): Promise<PolicyTestFileView> {
    const file = await this.dataSource.getRepository(PolicyTestFile).findOne({ where: { orgId: principal.orgId, name } });
    if (file === null) throw AppError.notFound('policy test file', name);
    return toView(file);
  }

  /**
   * Stores a test file; refused (409 policy_tests_failed) when it fails against the policies in
   * force, unless forced: a failing stored test would refuse every later change.
   */
  async put(principal: AdminPrincipal, name: string, source: string, force: boolean): Promise<{ created: boolean; file: PolicyTestFileView }> {
    if (!NAME_PATTERN.test(name)) throw AppError.invalid('test file name must be 1-128 characters of letters, digits, . _ - (starting with a letter or digit)');
    const suite = parseSuite(name, source);
    if (suite.policyFiles.length > 0) throw AppError.invalid("a stored test file runs against the organization's policies: remove 'policies'");
    let created = false;
    let forcedFailures: PolicyTestFailureView[] = [];
    await this.dataSource.transaction(async (manager) => {
      const repository = manager.getRepository(PolicyTestFile);
      const existing = await repository.findOne({ where: { orgId: principal.orgId, name } });
      created = existing === null;
      if (created && (await repository.count({ where: { orgId: principal.orgId } })) >= MAX_STORED_TEST_FILES) {
        throw AppError.invalid(`an organization keeps at most ${MAX_STORED_TEST_FILES} test files`);
      }
      const failures = await failuresOf([[name, suite]], await enforcedDefinitions(manager, principal.orgId), principal.orgId);
      if (failures.length > 0 && !force) throw testsFailed(failures, 'The test file fails against the policies in force');
      forcedFailures = failures;
      await repository.save({ orgId: principal.orgId, name, source });
    });
    this.audit.recordAdminEvent(principal, { action: created ? 'policy_test.create' : 'policy_test.update', details: forcedDetails({ file: name, tests: suite.tests.length }, forcedFailures) });
    return { created, file: await this.get(principal, name) };
  }

  async remove(principal: AdminPrincipal, name: string): Promise<void> {
    const result = await this.dataSource.getRepository(PolicyTestFile).delete({ orgId: principal.orgId, name });
    if (!result.affected) throw AppError.notFound('policy test file', name);
    this.audit.recordAdminEvent(principal, { action: 'policy_test.delete', details: { file: name } });
  }

  /** Runs every stored test file against the policies in force. */
  async run(principal: AdminPrincipal): Promise<PolicyTestRunView> {
    const manager = this.dataSource.manager;
    const suites = await storedSuites(manager, principal.orgId);
    const failures = await failuresOf(suites, await enforcedDefinitions(manager, principal.orgId), principal.orgId);
    const tests = suites.reduce((sum, [, suite]) => sum + suite.tests.length, 0);
    return { tests, passed: tests - failures.length, failures };
  }

  /** The stored tests that would fail with `definitions` in force, read in the caller's transaction. */
  async failuresWith(manager: EntityManager, orgId: string, definitions: readonly PolicyDefinition[]): Promise<PolicyTestFailureView[]> {
    return failuresOf(await storedSuites(manager, orgId), definitions, orgId);
  }
}

/** The 409 naming the failed tests. */
export function testsFailed(failures: PolicyTestFailureView[], what: string): AppError {
  const named = failures.slice(0, 3).map((failure) => `${failure.suite}: ${failure.test}`);
  const more = failures.length > 3 ? `, and ${failures.length - 3} more` : '';
  return new AppError(ErrorCode.PolicyTestsFailed, `${what}: ${named.join('; ')}${more} (force=true puts it in force anyway)`, { failures });
}

/** Audit details of a change: with the tests it was forced past, when it was. */
export function forcedDetails(details: Record<string, unknown>, failures: readonly PolicyTestFailureView[]): Record<string, unknown> {
  if (failures.length === 0) return details;
  return { ...details, forced: true, failedTests: failures.map((failure) => ({ suite: failure.suite, test: failure.test, failure: failure.failure })) };
}

function parseSuite(name: string, source: string): PolicyTestSuite {
  try {
    return loadPolicyTests(source, `test file ${name}`);
  } catch (error) {
    if (!(error instanceof PolicyLoadError)) throw error;
    throw invalidPolicy(error.errors);
  }
}

async function storedSuites(manager: EntityManager, orgId: string): Promise<Array<[string, PolicyTestSuite]>> {
  const files = await manager.getRepository(PolicyTestFile).find({ where: { orgId }, order: { name: 'ASC' } });
  // Stored files were valid when stored; one that no longer loads is skipped rather than blocking every change.
  return files.flatMap((file): Array<[string, PolicyTestSuite]> => {
    try {
      return [[file.name, loadPolicyTests(file.source, file.name)]];
    } catch {
      return [];
    }
  });
}

async function enforcedDefinitions(manager: EntityManager, orgId: string): Promise<PolicyDefinition[]> {
  const policies = await manager.getRepository(Policy).find({ where: { orgId }, order: { position: 'ASC' } });
  return policies.map((policy) => policy.definition);
}

async function failuresOf(suites: ReadonlyArray<[string, PolicyTestSuite]>, definitions: readonly PolicyDefinition[], orgId: string): Promise<PolicyTestFailureView[]> {
  if (suites.length === 0) return [];
  const set = compilePolicies(definitions, { namespace: orgId });
  const failures: PolicyTestFailureView[] = [];
  for (const [name, suite] of suites) {
    for (const result of await runPolicyTests(suite.tests, set)) {
      if (!result.passed) failures.push({ suite: name, test: result.test.name, line: result.test.line, column: result.test.column, failure: result.failure ?? '' });
    }
  }
  return failures;
}

function toView(file: PolicyTestFile): PolicyTestFileView {
  let tests: number;
  try {
    tests = loadPolicyTests(file.source, file.name).tests.length;
  } catch {
    tests = 0;
  }
  return { name: file.name, tests, source: file.source, updatedAt: file.updatedAt.toISOString() };
}
