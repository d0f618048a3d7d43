import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The admin dashboard, built into dist/dashboard, which the gateway serves at /dashboard
 * (src/gateway/app/dashboard.ts): `npm run build` runs this after the gateway's own build.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/dashboard/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: fileURLToPath(new URL('../../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    // The chart library is most of the bundle; one file of it, cached for good by its hash.
    chunkSizeWarningLimit: 1200,
  },
});
