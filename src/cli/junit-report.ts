import type { SuiteRun } from './policy-test-run';

/**
 * The JUnit XML report CI systems read (the schema Jenkins, GitLab and GitHub's test reporters
 * accept): one `<testsuite>` per test file, one `<testcase>` per test, a `<failure>` saying what
 * was expected and what decided instead.
 */
export function junitReport(runs: readonly SuiteRun[]): string {
  const tests = runs.reduce((sum, run) => sum + run.results.length, 0);
  const failures = runs.reduce((sum, run) => sum + run.results.filter((result) => !result.passed).length, 0);
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>', `<testsuites name="ags policy test" tests="${tests}" failures="${failures}" errors="0" time="${seconds(runs.reduce((sum, run) => sum + run.ms, 0))}">`];
  for (const run of runs) {
    const failed = run.results.filter((result) => !result.passed).length;
    lines.push(`  <testsuite name="${xml(run.file)}" tests="${run.results.length}" failures="${failed}" errors="0" skipped="0" time="${seconds(run.ms)}" file="${xml(run.file)}">`);
    for (const result of run.results) {
      const attributes = `name="${xml(result.test.name)}" classname="${xml(run.file)}" file="${xml(run.file)}" line="${result.test.line}" time="0"`;
      if (result.passed) {
        lines.push(`    <testcase ${attributes}/>`);
        continue;
      }
      lines.push(`    <testcase ${attributes}>`);
      lines.push(`      <failure message="${xml(result.failure ?? '')}" type="decision">${xml(`${run.file}:${result.test.line}:${result.test.column}: ${result.failure ?? ''}`)}</failure>`);
      lines.push('    </testcase>');
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>', '');
  return lines.join('\n');
}

/** Text for an XML attribute or element: the five reserved characters escaped, characters XML 1.0 forbids dropped. */
function xml(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}
