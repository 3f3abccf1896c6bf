import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * A fresh PGlite cluster, kept as the tarball PGlite itself dumps and loads. PGlite's initdb takes
 * 4 to 6 s of a fresh start and of every in-memory database the tests open; unpacking its result
 * takes under one (docs/performance.md, "Issue 14: a template for fresh PGlite databases"). The
 * file is keyed by PGlite's version, so an upgrade builds a new one; it lives in node_modules'
 * cache directory, which `npm ci` empties.
 */
const pgliteEntry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
const pgliteVersion = (JSON.parse(readFileSync(join(dirname(pgliteEntry), '..', 'package.json'), 'utf8')) as { version: string }).version;

export const DEFAULT_TEMPLATE_FILE = fileURLToPath(new URL(`../node_modules/.cache/pglite-template/pglite-${pgliteVersion}.tar`, import.meta.url));

/**
 * Runs in a worker thread, which then exits: initdb grows the WebAssembly heap it runs in by about
 * 400 MiB and never gives it back, and in a worker that memory leaves with the thread. Builds the
 * template when it is missing (written under a temporary name, then renamed, so concurrent test
 * workers never read half a file; a cache that cannot be written only costs the next start its
 * initdb), then, given a data directory, unpacks the template into it.
 */
const WORKER = `const { workerData } = require('node:worker_threads');
const { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs');
const { dirname } = require('node:path');
import(workerData.pgliteUrl).then(async ({ PGlite }) => {
  const { templateFile, dataDir, startParams } = workerData;
  let template = existsSync(templateFile) ? new Blob([readFileSync(templateFile)]) : undefined;
  if (template === undefined) {
    const fresh = await PGlite.create({ startParams });
    await fresh.exec('CHECKPOINT');
    template = await fresh.dumpDataDir('none');
    await fresh.close();
    const partial = templateFile + '.' + process.pid + '.' + Date.now();
    try {
      mkdirSync(dirname(templateFile), { recursive: true });
      writeFileSync(partial, new Uint8Array(await template.arrayBuffer()));
      renameSync(partial, templateFile);
    } catch {
      try { rmSync(partial, { force: true }); } catch {}
    }
  }
  if (dataDir !== undefined) {
    mkdirSync(dirname(dataDir), { recursive: true });
    const db = await PGlite.create(dataDir, { startParams, loadDataDir: template });
    await db.close();
  }
});`;

async function runTemplateWorker(templateFile: string, startParams: string[], dataDir?: string): Promise<void> {
  const pgliteUrl = import.meta.resolve('@electric-sql/pglite');
  const worker = new Worker(WORKER, { eval: true, workerData: { pgliteUrl, templateFile, dataDir, startParams } });
  const [exitCode] = await Promise.race([
    once(worker, 'exit') as Promise<[number]>,
    once(worker, 'error').then(([error]) => Promise.reject(error as Error)),
  ]);
  if (exitCode !== 0) throw new Error(`preparing a PGlite data directory (${dataDir ?? templateFile}) failed (worker exit code ${exitCode})`);
}

/** Builds the template if it is missing (`npm ci`'s postinstall runs this, scripts/pglite-template.ts). */
export function ensureTemplate(startParams: string[], templateFile = DEFAULT_TEMPLATE_FILE): Promise<void> {
  return runTemplateWorker(templateFile, startParams);
}

/** Creates a new data directory from the template (building the template first if need be). */
export function createDataDirFromTemplate(dataDir: string, startParams: string[], templateFile = DEFAULT_TEMPLATE_FILE): Promise<void> {
  return runTemplateWorker(templateFile, startParams, dataDir);
}

/**
 * The template's bytes for an in-memory database, built first if it is missing; undefined when it
 * could not be written (the caller then runs initdb itself).
 */
export async function templateForMemory(startParams: string[], templateFile = DEFAULT_TEMPLATE_FILE): Promise<Blob | undefined> {
  const read = () => readFile(templateFile).then((bytes) => new Blob([bytes]));
  try {
    return await read();
  } catch {
    await ensureTemplate(startParams, templateFile);
    return read().catch(() => undefined);
  }
}
