/**
 * Work put off to the end of this turn of the event loop (its check phase, after the I/O
 * callbacks of every socket that was ready), run in the order it was queued.
 *
 * The audit writers queue a turn's records here (AuditWriter, the sidecar's AuditWal), and the
 * lean paths write their answers here rather than as each decision is made. Under load a
 * turn reads many requests; written one after another at its end, their answers wake a waiting
 * client once instead of once per answer, and on a machine with few cores that wake-up (an
 * inter-processor interrupt, a virtual machine exit) costs more than the JSON work of a whole
 * decision: measured on /v1/check, answering at the end of the turn took the gateway's CPU per
 * call from 195 to 118 µs (docs/architecture.md, "The lean path"; docs/performance.md, "Measurements behind the design"). With one
 * request in a turn nothing waits: the check phase follows the I/O callback at once.
 */
const tasks: Array<() => void> = [];

/** Runs `task` at the end of this turn of the event loop, after the tasks queued before it. */
export function atTurnEnd(task: () => void): void {
  tasks.push(task);
  if (tasks.length === 1) setImmediate(runTasks);
}

function runTasks(): void {
  let failure: { error: unknown } | null = null;
  // A task may queue another (it runs in this pass); one that throws must not strand the rest.
  for (let i = 0; i < tasks.length; i++) {
    try {
      tasks[i]();
    } catch (error) {
      failure ??= { error };
    }
  }
  tasks.length = 0;
  if (failure !== null) throw failure.error;
}
