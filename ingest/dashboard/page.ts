import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { sendAsset, staticAsset, type StaticAsset } from '../http/static-asset.js';

/** The console's page; also where the identity provider sends the browser back after a sign-in. */
export const CONSOLE_PATH = '/dashboard';

export interface DashboardPageOptions {
  /** Where the page's files are; ingest/dashboard/web by default. */
  webDir?: URL;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * The page runs only its own files: no inline script or style, no eval, no third-party origin, and
 * its API calls go to this origin only. Trusted Types make any HTML-string sink (innerHTML) throw,
 * so a program name can never become markup.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  'trusted-types',
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': DASHBOARD_CSP,
  // frame-ancestors 'none' for the browsers that read only the older header.
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** Assets live under a version made from all their bytes, so they can be cached for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The page itself (and an asset asked for under an old version) is revalidated on every load. */
const REVALIDATE = 'no-cache';

/** Reads the page's files once, at start: a handful of small files, served from memory. */
function loadAssets(webDir: URL) {
  const files = new Map<string, Buffer>();
  for (const name of readdirSync(webDir).sort()) {
    if (CONTENT_TYPES[extname(name)]) files.set(name, readFileSync(new URL(name, webDir)));
  }
  const page = files.get('dashboard.html');
  if (!page) throw new Error(`dashboard.html is missing from ${webDir.pathname}`);
  files.delete('dashboard.html');

  const hash = createHash('sha256');
  for (const [name, bytes] of files) hash.update(name).update('\0').update(bytes).update('\0');
  const version = hash.digest('base64url').slice(0, 12);

  const assets = new Map<string, StaticAsset>();
  for (const [name, bytes] of files) assets.set(name, staticAsset(bytes, CONTENT_TYPES[extname(name)]!));
  const html = staticAsset(Buffer.from(page.toString('utf8').replaceAll('{{version}}', version)), CONTENT_TYPES['.html']!);
  return { version, html, assets };
}

const send = (request: FastifyRequest, reply: FastifyReply, asset: StaticAsset, cacheControl: string) =>
  sendAsset(request, reply, asset, { ...SECURITY_HEADERS, 'Cache-Control': cacheControl });

/**
 * The brand's dashboard page at /dashboard: static HTML, small ES modules and a stylesheet.
 * It signs in with a dashboard session token (kept in sessionStorage, sent as a Bearer header)
 * and reads the dashboard API; nothing here touches the database.
 */
export const dashboardPageRoutes: FastifyPluginAsync<DashboardPageOptions> = async (app, options) => {
  const { version, html, assets } = loadAssets(options.webDir ?? new URL('./web/', import.meta.url));
  const config = { surface: 'other' as const };
  const schema = { hide: true };

  app.get(CONSOLE_PATH, { config, schema }, (request, reply) => send(request, reply, html, REVALIDATE));
  // The service's root leads to the console (a person who opens the printed URL lands there).
  app.get('/', { config, schema }, (_request, reply) => reply.redirect(CONSOLE_PATH, 302));
  app.get('/dashboard/', { config, schema }, (_request, reply) => reply.redirect('/dashboard', 301));
  app.get<{ Params: { version: string; file: string } }>('/dashboard/assets/:version/:file', { config, schema }, (request, reply) => {
    const asset = assets.get(request.params.file);
    if (!asset) return reply.callNotFound();
    // A page from before a deploy asks for the old version: give it today's file, but not for a year.
    return send(request, reply, asset, request.params.version === version ? IMMUTABLE : REVALIDATE);
  });
};
