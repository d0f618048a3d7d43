/**
 * The import rules of the house (docs/architecture.md, "Layout and import rules"), checked by
 * `npm run lint`. A folder's path says which app owns it: src/core/ is what the gateway and the
 * edge sidecar both run, src/gateway/<feature>/ the gateway alone (storage-backed), src/sidecar/
 * the sidecar alone, src/cli/ the `ags` command. The admin dashboard (web/dashboard) speaks to
 * the gateway over its public HTTP APIs only.
 */
const SERVER_LIBRARIES = 'node_modules/(typeorm|@nestjs/typeorm|pg|pg-copy-streams|stripe|ioredis|nodemailer|@electric-sql)/';
const KERNEL = '^src/core/(policy-engine|decision|audit-record|edge-protocol|common|config|logging)/';

module.exports = {
  forbidden: [
    {
      name: 'core-serves-both-apps',
      comment: 'core/ is what both apps run: it imports no folder of an app.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^src/(gateway|sidecar|cli)/|^src/[^/]+\\.ts$' },
    },
    {
      name: 'apps-apart',
      comment: 'The sidecar builds on core/ alone; the gateway never imports the sidecar or the command line (the command line may drive the gateway).',
      severity: 'error',
      from: { path: '^src/(sidecar|gateway)/' },
      to: { path: '^src/(gateway|sidecar|cli)/|^src/[^/]+\\.ts$', pathNot: '^src/$1/' },
    },
    {
      name: 'engine-is-plain',
      comment: 'The policy engine imports nothing of the project and no framework: it runs the same in every host.',
      severity: 'error',
      from: { path: '^src/core/policy-engine/' },
      to: { pathNot: ['^src/core/policy-engine/', '^node_modules/(re2js|yaml|lru-cache)/', '^(node:)?[a-z_]+$'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'edge-reaches-no-storage',
      comment: 'core/ and the sidecar run without a database: nothing they load may pull TypeORM, pg, Stripe, ioredis or nodemailer in.',
      severity: 'error',
      from: { path: '^src/(core|sidecar)/' },
      to: { path: SERVER_LIBRARIES, reachable: true },
    },
    {
      name: 'core-layers',
      comment: 'Inside core/, the kernel (engine, decision, records, protocol) knows neither the HTTP layer, the telemetry nor a transport; the HTTP layer and the telemetry know no transport; transports never import each other (each app lists its routes where it is assembled); common/ imports none but logging.',
      severity: 'error',
      from: { path: KERNEL },
      to: { path: '^src/core/(http|telemetry|proxy|pdp|mcp)/' },
    },
    {
      name: 'core-layers-http-telemetry',
      severity: 'error',
      from: { path: '^src/core/(http|telemetry)/' },
      to: { path: '^src/core/(proxy|pdp|mcp)/' },
    },
    {
      name: 'core-layers-transports-apart',
      severity: 'error',
      from: { path: '^src/core/(proxy|pdp|mcp)/' },
      to: { path: '^src/core/(proxy|pdp|mcp)/', pathNot: '^src/core/$1/' },
    },
    {
      name: 'core-layers-common',
      severity: 'error',
      from: { path: '^src/core/common/' },
      to: { path: '^src/', pathNot: '^src/core/(common|logging)/' },
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
      comment: 'The gateway serves the built dashboard as static files (src/gateway/app/dashboard.ts) and never imports its source.',
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
