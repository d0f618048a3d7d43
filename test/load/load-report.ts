import type { CaseReport } from './fault-cases';

/** The verdict CI acts on: only wrong allows and loss beyond the documented bound fail a run, never timings. */
export function failuresOf(cases: readonly CaseReport[]): string[] {
  const failures: string[] = [];
  for (const report of cases) {
    if (report.wrongAllows.total > 0) failures.push(`${report.id}: ${report.wrongAllows.total} wrong allows (${report.wrongAllows.samples.slice(0, 3).join('; ')})`);
    // Entries still on their way when the wait ran out are not known to be lost: inconclusiveOf says so.
    if (!report.bound.within && report.settle.settled) {
      const { byTarget, answeredByRoute, samples } = report.missing;
      failures.push(
        `${report.id}: ${report.missing.total} decisions missing from the audit trail (by target ${JSON.stringify(byTarget)}, answered ones by route ${JSON.stringify(answeredByRoute)}), beyond the bound (${report.bound.rule}; allowed ${JSON.stringify(report.bound.allowed)}); e.g. ${samples.slice(0, 3).join('; ')}`,
      );
    }
  }
  return failures;
}

/** Cases whose loss could not be judged: the trail had not taken every entry when LOAD_SETTLE_TIMEOUT_S ran out. */
export function inconclusiveOf(cases: readonly CaseReport[]): string[] {
  return cases
    .filter((report) => !report.bound.within && !report.settle.settled)
    .map((report) => `${report.id}: ${report.missing.total} decisions not in the trail after ${report.settle.ms} ms, entries still pending ${JSON.stringify(report.settle.pendingLeft)}`);
}

/** The summary table: one line a case. */
export function summaryTable(cases: readonly CaseReport[]): string {
  const header = ['case', 'sent', 'answered by status', 'forwarded', 'audited', 'missing', 'allowed loss', 'wrong allows', 'recover', 'within bound', 'flush bound'];
  const rows = cases.map((report) => [
    report.id,
    String(report.sent),
    statusText(report.answeredByStatus),
    String(report.forwarded),
    String(report.audited),
    missingText(report),
    String(Object.values(report.bound.allowed).reduce((sum, n) => sum + n, 0)),
    String(report.wrongAllows.total),
    report.recoverMs === null ? 'not recovered' : `${(report.recoverMs / 1000).toFixed(1)} s`,
    report.bound.within ? 'yes' : 'NO',
    flushBoundText(report),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) => cells.map((cell, column) => (column === 2 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  ');
  const titles = cases.map((report) => `  ${report.id}: ${report.title}`);
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line), '', ...titles].join('\n');
}

/** One line after each case, while the run goes on. */
export function caseLine(report: CaseReport): string {
  return `${report.id}: sent ${report.sent} (${statusText(report.answeredByStatus)}), forwarded ${report.forwarded}, audited ${report.audited}, missing ${missingText(report)}, wrong allows ${report.wrongAllows.total}, recover ${report.recoverMs === null ? 'never' : `${report.recoverMs} ms`}, within bound: ${report.bound.within ? 'yes' : 'NO'}${report.settle.settled ? '' : ' (trail not settled)'}`;
}

/** Whether a kill lost no more than AUDIT_FLUSH_MS of entries plus a batch (documented while the database keeps up); `-` for other faults. */
function flushBoundText(report: CaseReport): string {
  if (report.bound.withinFlushBound === undefined) return '-';
  return report.bound.withinFlushBound ? `held (${report.bound.flushBound})` : `exceeded (${report.bound.flushBound})`;
}

function missingText(report: CaseReport): string {
  const { total, unanswered } = report.missing;
  return unanswered > 0 ? `${total} (${unanswered} unanswered)` : String(total);
}

/** `200:1234 403:510 ECONNREFUSED:40`, most frequent first. */
function statusText(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([key, n]) => `${key}:${n}`)
    .join(' ');
}
