/**
 * Builds the tracker script clients/browser/svc-tracker.js from clients/browser/src/tracker.ts
 * (`npm run build:tracker`). The file is committed: the service serves it without a build step,
 * and tests/ingest/tracking/tracker-script.test.ts checks that a rebuild gives the same bytes and that it stays
 * within 1,024 bytes gzipped. esbuild is pinned to an exact version so the bytes do not drift.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const TRACKER_ENTRY = fileURLToPath(new URL('../clients/browser/src/tracker.ts', import.meta.url));
export const TRACKER_FILE = fileURLToPath(new URL('../clients/browser/svc-tracker.js', import.meta.url));

/** The tracker's bytes as the build makes them. */
export async function buildTracker(): Promise<Buffer> {
  const result = await build({
    entryPoints: [TRACKER_ENTRY],
    bundle: true,
    minify: true,
    format: 'iife',
    // Browsers with fetch keepalive and optional chaining; nothing older is worth the bytes.
    target: ['es2020'],
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
    // The IIFE needs no "use strict" prologue: every byte counts against the budget.
    tsconfigRaw: { compilerOptions: { alwaysStrict: false } },
  });
  return Buffer.from(result.outputFiles[0]!.contents);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bytes = await buildTracker();
  writeFileSync(TRACKER_FILE, bytes);
  console.log(`${TRACKER_FILE}: ${bytes.length} bytes`);
}
