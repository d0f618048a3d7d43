/**
 * Fails the run when any test was skipped or left as a todo: a skipped test is a hole in the
 * suite that nobody decided to leave.
 */
class NoSkippedTestsReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    if (skipped > 0) this.error = new Error(`${skipped} test(s) skipped or todo: every test must run`);
  }

  getLastError() {
    return this.error;
  }
}

module.exports = NoSkippedTestsReporter;
