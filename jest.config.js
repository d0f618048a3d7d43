/**
 * Three projects: fast unit specs beside the code, e2e suites that boot the real app, and the
 * TypeScript SDK's suites (sdk/typescript), which start gateway processes from dist/ themselves.
 */
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.jest.json' }] };

module.exports = {
  // E2E suites start gateways (a few seconds each on a busy machine); unit tests finish far sooner.
  testTimeout: 60000,
  // Two test files at a time: an e2e file spends most of its time waiting on the gateways and
  // sidecars it starts, so on two cores two files finish in about two thirds of the time of one
  // after the other (files isolate themselves by organization, test/support/global-setup.ts).
  maxWorkers: 2,
  reporters: ['default', '<rootDir>/test/support/no-skipped-tests-reporter.js'],
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/bench/**/*.spec.ts'],
      transform,
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      transform,
    },
    {
      displayName: 'sdk',
      testEnvironment: 'node',
      rootDir: '.',
      testMatch: ['<rootDir>/sdk/typescript/test/**/*.spec.ts'],
      transform,
    },
  ],
};
