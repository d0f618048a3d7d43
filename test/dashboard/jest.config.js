/**
 * The dashboard's browser tests (`npm run test:dashboard`, run by .ci/run after `npm test` built
 * the gateway and the dashboard): Debian's chromium, driven by playwright-core, against a
 * gateway started from dist/ and seeded through its APIs.
 */
module.exports = {
  rootDir: '../..',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/dashboard/**/*.browser-spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.jest.json' }] },
  // Seeding starts a gateway, a sidecar and chromium: a minute or more on a busy machine.
  testTimeout: 180000,
  reporters: ['default', '<rootDir>/test/support/no-skipped-tests-reporter.js'],
};
