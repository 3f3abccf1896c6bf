/**
 * Builds the fresh-cluster template the embedded database starts from (core/pglite-template.ts), so
 * the first `npm start` after `npm ci` does not run PGlite's initdb. Run as `npm ci`'s postinstall.
 * A failure here fails nothing: the first start that needs the template builds it.
 */
import { pgliteStartParams } from '../core/db.js';
import { DEFAULT_TEMPLATE_FILE, ensureTemplate } from '../core/pglite-template.js';

try {
  await ensureTemplate(pgliteStartParams());
  console.log(`PGlite template ready: ${DEFAULT_TEMPLATE_FILE}`);
} catch (error) {
  console.warn(`PGlite template not built (the first start will build it): ${(error as Error).message}`);
}
