/**
 * The import rules of the house (docs/architecture.md, "Layout and import rules"), checked by
 * `npm run lint`.
 * The policy engine is a plain library; the database-free decision code (src/decisions), the
 * telemetry both apps share (src/telemetry) and the edge sidecar reach no storage, payment or
 * mail library and no folder of the gateway alone; transports never import each other; no
 * folder depends on itself through others. The admin dashboard (web/dashboard) speaks to the
 * gateway over its public HTTP APIs only.
 */
const GATEWAY_ONLY =
  '^src/(agents|alerts|analytics|api-keys|audit|auth|billing|cli|cluster|dashboard|database|docs|fleet|gateway-decisions|health|identity|keys|managed-identity|organizations|policies|policy-changes|sidecar-tokens|tool-pins|approvals)/|^src/[^/]+\\.ts$';
const SERVER_LIBRARIES = 'node_modules/(typeorm|@nestjs/typeorm|pg|pg-copy-streams|stripe|ioredis|nodemailer|@electric-sql)/';

module.exports = {
  forbidden: [
    {
      name: 'engine-is-plain',
      comment: 'The policy engine imports nothing of the project and no framework: it runs the same in every host.',
      severity: 'error',
      from: { path: '^src/policy-engine/' },
      to: { pathNot: ['^src/policy-engine/', '^node_modules/(re2js|yaml|lru-cache)/', '^(node:)?[a-z_]+$'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'edge-reaches-no-storage',
      comment: 'The decision core, the telemetry and the sidecar run without a database: nothing they load may pull TypeORM, pg, Stripe, ioredis or nodemailer in.',
      severity: 'error',
      from: { path: '^src/(decisions|sidecar|telemetry)/' },
      to: { path: SERVER_LIBRARIES, reachable: true },
    },
    {
      name: 'edge-reaches-no-gateway-folder',
      comment: 'What the gateway and the sidecar share lives in folders of its own; the gateway-only folders hold storage-backed code.',
      severity: 'error',
      from: { path: '^src/(decisions|sidecar|http|telemetry)/' },
      to: { path: GATEWAY_ONLY, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'telemetry-observes',
      comment: 'Telemetry observes both apps from outside their transports: it reads the decision events and the HTTP layer, never a transport or a feature.',
      severity: 'error',
      from: { path: '^src/telemetry/' },
      to: { path: '^src/', pathNot: '^src/(telemetry|common|config|logging|decisions|http|policy-engine)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'core-imports-no-transport',
      comment: 'The decision core knows no transport: transports translate into it.',
      severity: 'error',
      from: { path: '^src/decisions/' },
      to: { path: '^src/(proxy|pdp|mcp|sidecar|http)/' },
    },
    {
      name: 'transports-apart',
      comment: 'A transport never imports another: each app lists its routes where it is assembled.',
      severity: 'error',
      from: { path: '^src/(proxy|pdp|mcp)/' },
      to: { path: '^src/(proxy|pdp|mcp)/', pathNot: '^src/$1/' },
    },
    {
      name: 'common-imports-no-feature',
      comment: 'common/ serves every folder, so it imports none but logging.',
      severity: 'error',
      from: { path: '^src/common/' },
      to: { path: '^src/', pathNot: '^src/(common|logging)/' },
    },
    {
      name: 'http-serves-transports',
      comment: 'The HTTP layer serves the transports of both apps: it knows the decision core, never a transport or a feature.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/', pathNot: '^src/(http|common|logging|decisions|policy-engine)/' },
    },
    {
      name: 'dashboard-speaks-http-only',
      comment: 'The dashboard uses the public admin and analytics APIs, like any client: it imports no code of the gateway, its tests or its SDKs.',
      severity: 'error',
      from: { path: '^web/' },
      to: { path: '^(src|test|sdk|bench)/' },
    },
    {
      name: 'gateway-imports-no-dashboard',
      comment: 'The gateway serves the built dashboard as static files (src/dashboard) and never imports its source.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^web/' },
    },
    {
      name: 'no-folder-cycles',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-module-cycles',
      severity: 'error',
      from: { path: '^(src|web)/' },
      to: { circular: true, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'sdk-no-cycles',
      comment: 'The TypeScript SDK is a package of its own, small enough to have no module depending on itself through others, through types either (its generated protobuf types nest by nature: a Struct holds Values).',
      severity: 'error',
      from: { path: '^sdk/typescript/src/', pathNot: '^sdk/typescript/src/generated/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.spec\\.ts$' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
