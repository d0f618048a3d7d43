import fs from 'node:fs';
import path from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';

/** Where the admin dashboard is served (README, "Dashboard"). */
export const DASHBOARD_PATH = '/dashboard';

/** `npm run build` builds web/dashboard with Vite into dist/dashboard, beside the gateway's dist/src. */
export const DASHBOARD_DIR = path.resolve(__dirname, '..', '..', '..', 'dashboard');

/**
 * The dashboard keeps an admin token in session storage, so a script injected into its pages
 * could act as an administrator: only the dashboard's own scripts run, it talks only to this
 * gateway, and no other site may frame it. Inline styles stay allowed: the chart library writes
 * them into its tooltips.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const HASHED_ASSETS = `${path.sep}assets${path.sep}`;

/**
 * Serves the dashboard's static files at /dashboard on the gateway's express app, and its
 * index.html for the client-side routes below it (/dashboard/agents/agent_…). The pages use the
 * public admin and analytics APIs only; nothing here reads or grants anything.
 */
export function serveDashboard(app: NestExpressApplication, directory = DASHBOARD_DIR): void {
  app.useStaticAssets(directory, { prefix: DASHBOARD_PATH, index: 'index.html', setHeaders: (response, file) => setDashboardHeaders(response, file) });
  app.use(DASHBOARD_PATH, clientRoutes(path.join(directory, 'index.html')));
}

function clientRoutes(indexFile: string) {
  return (request: Request, response: Response, next: NextFunction): void => {
    if (!isPageRequest(request)) return next();
    if (!fs.existsSync(indexFile)) {
      response.status(404).json({ error: 'not_found', message: 'The dashboard is not built: run `npm run build` (it builds web/dashboard into dist/dashboard)' });
      return;
    }
    setDashboardHeaders(response, indexFile);
    response.sendFile(indexFile);
  };
}

/** A page of the single-page app: a GET or HEAD whose last path segment names no file. */
function isPageRequest(request: Request): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const lastSegment = request.path.slice(request.path.lastIndexOf('/') + 1);
  return !lastSegment.includes('.');
}

function setDashboardHeaders(response: Response, file: string): void {
  response.setHeader('X-Content-Type-Options', 'nosniff');
  if (file.endsWith('.html')) {
    response.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    response.setHeader('X-Frame-Options', 'DENY');
    response.setHeader('Referrer-Policy', 'no-referrer');
    // A new build must reach admins at once: the page names the hashed assets of its build.
    response.setHeader('Cache-Control', 'no-cache');
    return;
  }
  if (file.includes(HASHED_ASSETS)) response.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
}
