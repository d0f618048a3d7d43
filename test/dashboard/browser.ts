import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (`apt-get install -y chromium`; .ci/run installs it): Playwright's own browser download cannot run here. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless chromium driven by playwright-core. Playwright gives each launch a new empty profile
 * (its own --user-data-dir); the flags keep chromium off the network beyond the gateway under
 * test (background fetches, updates, sync and QUIC are refused by a closed network, many at a time).
 */
export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`The dashboard's browser tests drive Debian's chromium at ${CHROMIUM}, which is not installed: run \`apt-get install -y chromium\` (as root), then run them again.`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
