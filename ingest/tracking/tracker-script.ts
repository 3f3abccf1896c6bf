import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { sendAsset, staticAsset } from '../http/static-asset.js';

export interface TrackerScriptOptions {
  /** The built tracker; clients/browser/svc-tracker.js (committed, `npm run build:tracker`) by default. */
  file?: URL;
}

export const TRACKER_FILE = new URL('../../clients/browser/svc-tracker.js', import.meta.url);

/**
 * The URL is the one brands paste (`/js/svc-tracker.js`), so it carries no version: browsers keep
 * it an hour, then revalidate with the ETag (a 304 costs no body). Any site may load it: it is a
 * public script, and a page isolated with COEP needs CORP `cross-origin` to run it.
 */
const HEADERS = {
  'Cache-Control': 'public, max-age=3600',
  'Access-Control-Allow-Origin': '*',
  'Cross-Origin-Resource-Policy': 'cross-origin',
  'X-Content-Type-Options': 'nosniff',
};

/** GET /js/svc-tracker.js: the browser tracker, read once at start and served from memory. */
export const trackerScriptRoutes: FastifyPluginAsync<TrackerScriptOptions> = async (app, options) => {
  const asset = staticAsset(readFileSync(options.file ?? TRACKER_FILE), 'text/javascript; charset=utf-8');
  app.get('/js/svc-tracker.js', { config: { surface: 'trackerScript' }, schema: { hide: true } }, (request, reply) =>
    sendAsset(request, reply, asset, HEADERS),
  );
};
