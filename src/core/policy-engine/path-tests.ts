import type { SyncTest } from './sync-test';
import type { AgentField, InputField, PathRef } from './ir';
import { ownValue, pathReader } from './path-readers';
import type { ValueTest } from './value-tests';

/**
 * A test of the value at a path, with the read inlined into the closure: one indirect call
 * (the test) per comparison instead of two, for the path shapes conditions use most.
 */
export function testAtPath(path: PathRef, test: ValueTest): SyncTest {
  switch (path.kind) {
    case 'agent':
      return agentTest(path.field, test);
    case 'input':
      return inputTest(path.field, test);
    case 'delegation':
      return path.field === 'depth' ? (input) => test(input.delegation.depth) : (input) => test(input.delegation.chain);
    case 'org':
    case 'tool':
    case 'session':
    case 'agent-labels':
      return readThenTest(path, test);
    case 'args':
    case 'context':
      return path.segments.length === 1 ? topLevelTest(path.kind, path.segments[0], test) : readThenTest(path, test);
  }
}

function topLevelTest(root: 'args' | 'context', key: string, test: ValueTest): SyncTest {
  if (root === 'args') return (input) => test(ownValue(input.args, key));
  return (input) => test(ownValue(input.context, key));
}

function readThenTest(path: PathRef, test: ValueTest): SyncTest {
  const read = pathReader(path);
  return (input) => test(read(input));
}

function agentTest(field: AgentField, test: ValueTest): SyncTest {
  switch (field) {
    case 'id':
      return (input) => test(input.agent.id);
    case 'name':
      return (input) => test(input.agent.name);
    case 'trust_tier':
      return (input) => test(input.agent.trust_tier);
    case 'tags':
      return (input) => test(input.agent.tags);
    case 'org':
      return (input) => test(input.agent.org);
  }
}

function inputTest(field: InputField, test: ValueTest): SyncTest {
  switch (field) {
    case 'action':
      return (input) => test(input.action);
    case 'resource':
      return (input) => test(input.resource);
    case 'plugin':
      return (input) => test(input.plugin);
    case 'function':
      return (input) => test(input.function);
  }
}
