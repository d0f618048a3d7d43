import fs from 'node:fs';
import type { Logger } from 'pino';
import type { AlertsConfig } from '../config/app-config';
import type { DecisionEvent } from '../decisions/decision-events';
import { startAlertReceiver } from '../../test/support/alert-receivers';
import { AlertDispatcher } from './alert-dispatcher';
import { activeTriggers, raiseAlerts } from './alert-triggers';

/** The hand-over to the alert worker thread (the real one, from dist/), delivering to a real receiver. */

function denials(count: number): unknown[] {
  const batch: unknown[] = [];
  for (let index = 0; index < count; index++) {
    const event = {
      entry: { id: `aud_${index}`, ts: Date.now(), orgId: 'org_1', traceId: `t${index}`, agentId: 'agent_1', agentName: 'bot', trustTier: 'verified', action: 'read:x', method: 'GET', path: '/x', decision: 'deny', enforced: true, rateLimited: false, policyName: 'p', reason: 'no', status: 403, upstreamStatus: null, input: null },
      decision: { effect: 'deny', policy: 'p', rule: 'r', reason: 'no' },
    } as unknown as DecisionEvent;
    raiseAlerts(event, activeTriggers(['deny']), batch);
  }
  return batch;
}

describe('AlertDispatcher', () => {
  it('drops a batch that would put the worker more than its backlog behind, with a warning, and takes batches again once it has caught up', async () => {
    const receiver = await startAlertReceiver();
    const warnings: Array<Record<string, unknown>> = [];
    const logger = { warn: (fields: Record<string, unknown>) => warnings.push(fields), error: () => undefined } as unknown as Logger;
    const config = { on: ['deny'], webhookUrl: `${receiver.url}/hook`, email: { enabled: false, to: [], apiUrl: '', smtpPort: 25 }, ratePerMinute: 1000, instanceName: 'gw', environment: 'test' } as AlertsConfig;
    const dispatcher = new AlertDispatcher({ config }, logger, 5);
    try {
      dispatcher.dispatch(denials(6), 6);
      expect(warnings).toEqual([{ dropped: 6, backlog: 0 }]);
      dispatcher.dispatch(denials(5), 5);
      expect(await receiver.waitFor(5)).toHaveLength(5);
      // The worker has taken that batch (its alerts were sent), so the backlog is free again.
      dispatcher.dispatch(denials(5), 5);
      expect(await receiver.waitFor(10)).toHaveLength(10);
      expect(warnings).toHaveLength(1);
    } finally {
      await dispatcher.close();
      await receiver.close();
    }
  });

  it('runs the worker thread at the lowest CPU priority, and no other thread of the process', async () => {
    const receiver = await startAlertReceiver();
    const logger = { warn: () => undefined, error: () => undefined } as unknown as Logger;
    const config = { on: ['deny'], webhookUrl: `${receiver.url}/hook`, email: { enabled: false, to: [], apiUrl: '', smtpPort: 25 }, ratePerMinute: 1000, instanceName: 'gw', environment: 'test' } as AlertsConfig;
    const dispatcher = new AlertDispatcher({ config }, logger);
    try {
      expect(threadNiceness()).not.toContain(19);
      dispatcher.dispatch(denials(1), 1);
      await receiver.waitFor(1);
      expect(threadNiceness().filter((nice) => nice === 19)).toHaveLength(1);
    } finally {
      await dispatcher.close();
      await receiver.close();
    }
  });
});

/** The nice value of each thread of this process (Linux: field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNiceness(): number[] {
  return fs.readdirSync('/proc/self/task').map((tid) => {
    const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}
