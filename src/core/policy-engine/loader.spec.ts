import { compilePolicies } from './compile-policies';
import { PolicyLoadError } from './errors';
import { loadPolicyDocument, loadPolicyFile, loadPolicyFileOrDocument } from './loader';
import type { PolicyError } from './types';

function loadErrors(run: () => unknown): PolicyError[] {
  try {
    run();
  } catch (error) {
    if (error instanceof PolicyLoadError) return error.errors;
    throw error;
  }
  throw new Error('expected a PolicyLoadError');
}

/** [line, column, message, policy, rule] for compact tables. */
function brief(errors: PolicyError[]): [number, number, string, string?, string?][] {
  return errors.map((error) => {
    const row: [number, number, string, string?, string?] = [error.line, error.column, error.message];
    if (error.policy !== undefined || error.rule !== undefined) row.push(error.policy);
    if (error.rule !== undefined) row.push(error.rule);
    return row;
  });
}

const ROOTS = 'agent, args, context, action, resource, plugin, function, delegation, org, tool, session';
const TIERS = 'expected unverified, verified, trusted, privileged or an alias (untrusted, sandboxed, restricted, standard, elevated)';

describe('loadPolicyFile', () => {
  it('loads the contract example', () => {
    const source = `policies:
  - name: block-sensitive-files
    description: optional text
    match: { plugin: FilePlugin, function: "Read*" }   # optional; globs
    rules:
      - name: system-paths                              # optional
        condition: args.path starts_with "/etc" or args.path contains ".."
        action: deny
        reason: Access to system files blocked
  - name: write-rate
    match: { action: "write:*" }
    default: allow
    rules:
      - condition: rate_limit(per_agent, 10, 1m)
        action: deny
        reason: Too many writes
      - condition: true
        action: allow
        reason: Always
`;
    expect(loadPolicyFile(source, 'policies.yaml')).toEqual([
      {
        name: 'block-sensitive-files',
        description: 'optional text',
        match: { plugin: 'FilePlugin', function: 'Read*' },
        rules: [
          {
            name: 'system-paths',
            condition: 'args.path starts_with "/etc" or args.path contains ".."',
            action: 'deny',
            reason: 'Access to system files blocked',
          },
        ],
      },
      {
        name: 'write-rate',
        match: { action: 'write:*' },
        default: 'allow',
        rules: [
          { condition: 'rate_limit(per_agent, 10, 1m)', action: 'deny', reason: 'Too many writes' },
          { condition: 'true', action: 'allow', reason: 'Always' },
        ],
      },
    ]);
  });

  it('accepts JSON and an empty list', () => {
    expect(loadPolicyFile('{"policies": [{"name": "j", "rules": []}]}', 'p.json')).toEqual([{ name: 'j', rules: [] }]);
    expect(loadPolicyFile('policies: []', 'p.yaml')).toEqual([]);
  });

  it('reports every shape error with its line and column, in source order', () => {
    const source = `policies:
  - name: dup
    rules: []
  - name: dup
    rules: []
  - description: no name
    rules: []
  - name: 5
    rules: []
  - name: default
    rules: []
  - name: shape
    descripton: typo
    description: [1]
    match: { plugin: http, verb: GET, action: "read?" }
    default: maybe
    rules:
      - just a string
      - name: r1
        condition: true
        action: deny
        reason: ok
        extra: 1
      - name: r1
        condition: [1]
        action: block
        reason: ""
      - name: r3
  - name: no-rules
  - name: rules-map
    rules: { a: 1 }
  - name: bad-match
    match: FilePlugin
    rules: []
`;
    const errors = loadErrors(() => loadPolicyFile(source, 'bad.yaml'));
    expect(errors.every((error) => error.file === 'bad.yaml')).toBe(true);
    expect(brief(errors)).toEqual([
      [4, 11, "duplicate policy name 'dup' (first defined at line 2)", 'dup'],
      [6, 5, "missing required field 'name'"],
      [8, 11, "'name' must be a non-empty string"],
      [10, 11, "policy name 'default' is reserved: it names the decision when no policy applies"],
      [13, 5, "unknown key 'descripton' in policy (expected name, description, mode, match, default, rules)", 'shape'],
      [14, 18, "'description' must be a string", 'shape'],
      [15, 28, "unknown key 'verb' in match (expected plugin, function, action)", 'shape'],
      [15, 47, "bad glob in match.action: unsupported glob character '?': only * is a wildcard", 'shape'],
      [16, 14, "'default' must be 'allow' or 'deny'", 'shape'],
      [18, 9, 'a rule must be a mapping with condition, action and reason', 'shape', 'shape#0'],
      [23, 9, "unknown key 'extra' in rule (expected name, condition, action, reason, approvers, timeout, labels, scope, ttl, cost)", 'shape', 'r1'],
      [24, 15, "duplicate rule name 'r1' in policy 'shape'", 'shape', 'r1'],
      [25, 20, "'condition' must be a string", 'shape', 'r1'],
      [26, 17, "'action' must be 'allow', 'deny', 'alert', 'require_approval' or 'label'", 'shape', 'r1'],
      [27, 17, "'reason' must be a non-empty string", 'shape', 'r1'],
      [28, 9, "missing required field 'action' (allow, deny, alert, require_approval or label)", 'shape', 'r3'],
      [28, 9, "missing required field 'reason'", 'shape', 'r3'],
      [28, 9, "missing required field 'condition'", 'shape', 'r3'],
      [29, 5, "missing required field 'rules'", 'no-rules'],
      [31, 12, "'rules' must be a list", 'rules-map'],
      [33, 12, "'match' must be a mapping of plugin, function and/or action globs", 'bad-match'],
    ]);
  });

  it('positions condition errors inside the YAML scalar, whatever its style', () => {
    const source = `policies:
  - name: conditions
    rules:
      - name: plain
        condition: args.path starts_with "/etc" or user.id == 1
        action: deny
        reason: r
      - name: double
        condition: "args[\\"a\\"] == \\"\\\\t\\" and agent.colour == 1"
        action: deny
        reason: r
      - name: single
        condition: 'args.x == ''it'' and bogus(1)'
        action: deny
        reason: r
      - name: literal
        condition: |
          args.x == 1 and
            rate_limit(per_user, 10, 1m)
        action: deny
        reason: r
      - name: folded
        condition: >
          args.x == 1
          and agent.trust_tier > "boss"
        action: deny
        reason: r
      - name: plain-multiline
        condition: args.x == 1
          and args.y ==
        action: deny
        reason: r
      - name: unsafe
        condition: args.q matches "(a)\\\\1c" or rate_limit(per_agent, 10, 1x)
        action: deny
        reason: r
`;
    expect(brief(loadErrors(() => loadPolicyFile(source, 'c.yaml')))).toEqual([
      [5, 52, `unknown variable 'user' (expected one of ${ROOTS})`, 'conditions', 'plain'],
      [9, 54, "unknown agent field 'colour' (expected agent.id, agent.name, agent.trust_tier, agent.tags, agent.org)", 'conditions', 'double'],
      [13, 42, "unknown function 'bogus' (expected exists, rate_limit, budget, session.called, session.count, session.labels.has or agent.labels.has)", 'conditions', 'single'],
      [19, 24, 'bad rate_limit scope: expected per_agent, per_org, per_action, global', 'conditions', 'literal'],
      [25, 34, `'boss' is not a trust tier: ${TIERS}`, 'conditions', 'folded'],
      [30, 24, 'expected a value, found end of condition', 'conditions', 'plain-multiline'],
      [
        34,
        39,
        'unsafe or invalid regular expression: backreference \\1 at offset 3 is not supported: RE2 matches in linear time and has no backreferences',
        'conditions',
        'unsafe',
      ],
      [34, 74, 'bad rate_limit window: expected a number and a unit s, m, h or d, e.g. 30s or 1m', 'conditions', 'unsafe'],
    ]);
  });

  it('positions operator, argument-count and count errors', () => {
    const source = [
      'policies:',
      '  - name: p',
      '    rules:',
      '      - condition: args.path startswith "/etc"',
      '        action: deny',
      '        reason: r',
      '      - condition: exists() or rate_limit(per_agent, 0, 1m)',
      '        action: deny',
      '        reason: r',
      '      - condition: "rate_limit(global, 1, 1s) == true"\r',
      '        action: deny\r',
      '        reason: r\r',
      '',
    ].join('\n');
    expect(brief(loadErrors(() => loadPolicyFile(source, 'o.yaml')))).toEqual([
      [
        4,
        30,
        "unknown operator 'startswith' (expected ==, !=, <, <=, >, >=, starts_with, ends_with, contains, in, matches, and, or)",
        'p',
        'p#0',
      ],
      [7, 20, 'exists() takes 1 argument (a path), got 0', 'p', 'p#1'],
      [7, 54, 'bad rate_limit count: expected a whole number from 1 to 1000000', 'p', 'p#1'],
      [10, 21, 'rate_limit(...) is a condition on its own; it cannot be an operand of a comparison', 'p', 'p#2'],
    ]);
  });

  it('falls back to the start of a block scalar it cannot map', () => {
    const source = 'policies:\n  - name: p\n    rules:\n      - condition: |4\n              nope(1)\n        action: deny\n        reason: r\n';
    const [error] = loadErrors(() => loadPolicyFile(source, 'b.yaml'));
    expect(error).toMatchObject({ line: 4, message: "unknown function 'nope' (expected exists, rate_limit, budget, session.called, session.count, session.labels.has or agent.labels.has)" });
  });

  it('positions condition errors in JSON sources', () => {
    const source = `{"policies": [
  {"name": "j", "rules": [
    {"condition": "args.x = 1", "action": "deny", "reason": "r"}
  ]}
]}`;
    expect(brief(loadErrors(() => loadPolicyFile(source, 'p.json')))).toEqual([[3, 27, "unexpected '=': write '==' to compare", 'j', 'j#0']]);
  });

  it('does not count a byte order mark (Windows tools write one) in the columns of line 1', () => {
    const json = '{"policies":[{"name":"p","rules":[{"condition":"foo","action":"deny","reason":"r"}]}]}';
    const expected = [[1, 49, `unknown variable 'foo' (expected one of ${ROOTS})`, 'p', 'p#0']];
    expect(json.indexOf('foo') + 1).toBe(49);
    expect(brief(loadErrors(() => loadPolicyFile(`\ufeff${json}`, 'bom.json')))).toEqual(expected);
    expect(brief(loadErrors(() => loadPolicyFile('\ufeffpolicies: 1\n', 'bom.yaml')))).toEqual([[1, 11, "'policies' must be a list"]]);
  });

  it('reports YAML syntax errors', () => {
    const errors = loadErrors(() => loadPolicyFile('policies:\n  - name: a\n    rules: [\n', 'broken.yaml'));
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatchObject({ file: 'broken.yaml', line: 4, column: 1 });
    expect(errors[0].message).toMatch(/^YAML syntax error: /);
  });

  it('reports duplicate YAML keys', () => {
    const errors = loadErrors(() => loadPolicyFile('policies:\n  - name: a\n    name: b\n    rules: []\n', 'dup.yaml'));
    expect(brief(errors)).toEqual([[3, 5, 'YAML syntax error: Map keys must be unique']]);
  });

  it.each<[string, [number, number, string][]]>([
    ['- a\n', [[1, 1, "expected a mapping with a 'policies' list"]]],
    ['', [[1, 1, "expected a mapping with a 'policies' list"]]],
    ['polices: []\n', [[1, 1, "unknown key 'polices' (expected policies)"], [1, 1, "missing 'policies' list"]]],
    ['policies: {}\n', [[1, 11, "'policies' must be a list"]]],
    ['policies:\n  - 42\n', [[2, 5, 'a policy must be a mapping with name and rules']]],
  ])('rejects the document %j', (source, expected) => {
    expect(brief(loadErrors(() => loadPolicyFile(source, 'f.yaml')))).toEqual(expected);
  });

  it('rejects alias bombs', () => {
    const bomb = `a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
policies: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
`;
    const errors = loadErrors(() => loadPolicyFile(bomb, 'bomb.yaml'));
    expect(errors[0].message).toMatch(/^YAML error: /);
  });

  it('summarises all errors in the thrown message', () => {
    expect(() => loadPolicyFile('policies:\n  - name: x\n    rules:\n      - condition: a ==\n        action: deny\n        reason: r\n      - {}\n', 'm.yaml')).toThrow(
      'm.yaml:4:24: policy "x", rule "x#0": expected a value, found end of condition (and 3 more errors)',
    );
  });
});

describe('loadPolicyDocument', () => {
  it('loads a single policy from YAML', () => {
    const source = 'name: single\nmatch: { plugin: http }\nrules:\n  - condition: agent.trust_tier >= trusted\n    action: allow\n    reason: ok\n';
    expect(loadPolicyDocument(source, 'body')).toEqual({
      name: 'single',
      match: { plugin: 'http' },
      rules: [{ condition: 'agent.trust_tier >= trusted', action: 'allow', reason: 'ok' }],
    });
  });

  it('loads a single policy from JSON and positions its errors', () => {
    expect(loadPolicyDocument('{"name":"x","rules":[]}', 'body')).toEqual({ name: 'x', rules: [] });
    const source = '{"name":"x","rules":[{"condition":"nope(1)","action":"deny","reason":"r"}]}';
    expect(brief(loadErrors(() => loadPolicyDocument(source, 'body')))).toEqual([
      [1, 36, "unknown function 'nope' (expected exists, rate_limit, budget, session.called, session.count, session.labels.has or agent.labels.has)", 'x', 'x#0'],
    ]);
  });

  it('checks and positions tens of thousands of keys in linear time (a 1 MiB body holds over 100,000)', () => {
    const keys = 40_000;
    const source = `name: p\nrules: []\n${Array.from({ length: keys }, (_, i) => `k${i}: 1\n`).join('')}k7: 2\n`;
    const started = Date.now();
    const errors = loadErrors(() => loadPolicyDocument(source, 'body'));
    // Both the duplicate-key check and the locator compared each key with every other one:
    // 20,000 keys took 46 s, during which the gateway answered nothing (40,000: about 3 min).
    // Linear, they take well under a second; the bound leaves room for a loaded CI machine.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(brief(errors)).toEqual([[keys + 3, 1, 'YAML syntax error: Map keys must be unique']]);
    const unknown = loadErrors(() => loadPolicyDocument(source.replace(/k7: 2\n$/, ''), 'body'));
    expect(Date.now() - started).toBeLessThan(40_000);
    expect(unknown).toHaveLength(keys);
    expect(brief(unknown.slice(-1))).toEqual([[keys + 2, 1, `unknown key 'k${keys - 1}' in policy (expected name, description, mode, match, default, rules)`, 'p']]);
  });

  it('reports every duplicate key, in nested mappings and lists too, at the repeated key', () => {
    const source = 'name: p\nrules:\n  - {condition: "true", action: deny, reason: r, action: allow}\nmatch:\n  action: "x"\n  action: "y"\nname: q\n';
    expect(brief(loadErrors(() => loadPolicyDocument(source, 'body')))).toEqual([
      [3, 50, 'YAML syntax error: Map keys must be unique'],
      [6, 3, 'YAML syntax error: Map keys must be unique'],
      [7, 1, 'YAML syntax error: Map keys must be unique'],
    ]);
  });

  it('rejects a policies file where one policy is expected', () => {
    expect(brief(loadErrors(() => loadPolicyDocument('policies: []', 'body')))).toEqual([
      [1, 1, "missing required field 'name'"],
      [1, 1, "unknown key 'policies' in policy (expected name, description, mode, match, default, rules)"],
      [1, 1, "missing required field 'rules'"],
    ]);
  });
});

describe('nesting', () => {
  const tooDeep = 'YAML nested more than 64 levels deep';

  // yaml builds its whole syntax tree before its recursive composer overflows the stack: 1 MiB of
  // `{` took 1.5 s and 600 MB and answered "Maximum call stack size exceeded".
  it.each([
    ['flow collections', `name: p\nrules: []\nmatch: ${'['.repeat(200_000)}`, 3, 70],
    ['block sequences on one line', `name: p\nrules:\n  ${'- '.repeat(200_000)}x`, 3, 127],
    ['indented mappings', Array.from({ length: 1_000 }, (_, depth) => `${' '.repeat(depth)}k${depth}:`).join('\n'), 64, 67],
  ])('refuses %s nested too deep, where the depth passes the limit', (_what, source, line, column) => {
    expect(brief(loadErrors(() => loadPolicyDocument(source, 'body')))).toEqual([[line, column, tooDeep]]);
  });

  it('does not count brackets inside strings, comments or block scalars', () => {
    const brackets = '['.repeat(200);
    const source = `name: "${brackets}" # ${brackets}\ndescription: |\n  ${brackets}\nrules:\n  - condition: 'args.x == "${brackets}"'\n    action: deny\n    reason: r ${brackets}\n`;
    expect(loadPolicyDocument(source, 'body').rules).toHaveLength(1);
  });

  it('loads a file of ordinary depth, lists inside mappings inside lists', () => {
    const args = `{a: ${'{b: ['.repeat(10)}1${']}'.repeat(10)}}`;
    const source = `policies:\n  - name: p\n    match: { plugin: http }\n    rules:\n      - condition: args.a == 1\n        action: deny\n        reason: ${JSON.stringify(args)}\n`;
    expect(loadPolicyFile(source, 'file')[0].rules[0].reason).toBe(args);
  });

  it('applies to proposed policies, a file or one policy', () => {
    expect(brief(loadErrors(() => loadPolicyFileOrDocument(`policies: ${'['.repeat(100)}`, 'proposed')))).toEqual([[1, 73, tooDeep]]);
  });
});

describe('loadPolicyFileOrDocument', () => {
  it('reads a policies file as a file and anything else as one policy', () => {
    expect(loadPolicyFileOrDocument('policies:\n  - {name: a, rules: []}\n  - {name: b, rules: []}\n', 'proposed').map((policy) => policy.name)).toEqual(['a', 'b']);
    expect(loadPolicyFileOrDocument('{"name":"one","rules":[]}', 'proposed').map((policy) => policy.name)).toEqual(['one']);
    expect(brief(loadErrors(() => loadPolicyFileOrDocument('policies: 3', 'proposed')))).toEqual([[1, 11, "'policies' must be a list"]]);
  });

  it('reports every error of a body of many, each error built without a stack trace', () => {
    const errors = loadErrors(() => loadPolicyFileOrDocument(`${'&a '.repeat(3_000)}x`, 'proposed'));
    expect(errors).toHaveLength(2_999);
    expect(brief(errors.slice(0, 1))).toEqual([[1, 4, 'YAML syntax error: A node can have at most one anchor']]);
    expect(Error.stackTraceLimit).toBeGreaterThan(0);
  });
});

describe('compilePolicies validation', () => {
  it('checks definitions again, positioning condition errors inside the condition', () => {
    const errors = loadErrors(() =>
      compilePolicies(
        [
          { name: 'a', rules: [{ condition: 'x ==\n  1 or agent.colour', action: 'deny', reason: 'r' }] },
          { name: 'a', rules: [] },
          { name: 'b', rules: [{ condition: 'true', action: 'permit' as 'allow', reason: 'r' }] },
        ],
        { file: 'db' },
      ),
    );
    expect(errors).toEqual([
      { file: 'db', policy: 'a', rule: 'a#0', line: 1, column: 1, message: `unknown variable 'x' (expected one of ${ROOTS})` },
      {
        file: 'db',
        policy: 'a',
        rule: 'a#0',
        line: 2,
        column: 14,
        message: "unknown agent field 'colour' (expected agent.id, agent.name, agent.trust_tier, agent.tags, agent.org)",
      },
      { file: 'db', policy: 'a', line: 0, column: 0, message: "duplicate policy name 'a' (policy #0 has it)" },
      { file: 'db', policy: 'b', rule: 'b#0', line: 0, column: 0, message: "'action' must be 'allow', 'deny', 'alert', 'require_approval' or 'label'" },
    ]);
  });

  it('names the file <policies> by default', () => {
    expect(loadErrors(() => compilePolicies([{ name: '', rules: [] }]))[0]).toMatchObject({ file: '<policies>', message: "'name' must be a non-empty string" });
  });
});
