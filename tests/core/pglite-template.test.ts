/**
 * Fresh embedded databases start from a template of a fresh cluster instead of running PGlite's
 * initdb each time (core/pglite-template.ts). A template carrying a marker table proves it is
 * the one used, in memory and on disk; a missing one is built where it belongs.
 */
import { PGlite } from '@electric-sql/pglite';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, pgliteStartParams, sql, type Database } from '../../core/db.js';
import { migrate } from '../../core/migrate.js';

const markers = sql('test.template_markers', 'SELECT note FROM template_marker');
const tables = sql('test.template_tables', "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'template_marker'");

describe('PGlite template for fresh databases', () => {
  let dir: string;
  let markedTemplate: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-template-'));
    const source = await PGlite.create({ startParams: pgliteStartParams() });
    await source.exec("CREATE TABLE template_marker (note text); INSERT INTO template_marker VALUES ('from the template'); CHECKPOINT");
    markedTemplate = join(dir, 'marked.tar');
    await writeFile(markedTemplate, new Uint8Array(await (await source.dumpDataDir('none')).arrayBuffer()));
    await source.close();
  }, 120_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const expectMarked = async (db: Database) => expect(await db.many(markers)).toEqual([{ note: 'from the template' }]);

  it('opens an in-memory database from the template, which then migrates and writes', { timeout: 120_000 }, async () => {
    const db = await openDatabase({ kind: 'pglite', dataDir: undefined }, { pgliteTemplateFile: markedTemplate });
    try {
      await expectMarked(db);
      expect((await migrate(db)).length).toBeGreaterThan(0);
    } finally {
      await db.close();
    }
  });

  it('unpacks a fresh data directory from the template, renamed into place over what a crashed start left, and keeps it', { timeout: 120_000 }, async () => {
    const dataDir = join(dir, 'data', 'pg');
    // What a start killed while unpacking leaves behind; the next fresh start clears it.
    await mkdir(join(dir, 'data', 'pg.partial-999999'), { recursive: true });
    await writeFile(join(dir, 'data', 'pg.partial-999999', 'PG_VERSION'), '17\n');
    const first = await openDatabase({ kind: 'pglite', dataDir }, { pgliteTemplateFile: markedTemplate });
    try {
      await expectMarked(first);
      await first.many(sql('test.template_write', "INSERT INTO template_marker VALUES ('written after')"));
    } finally {
      await first.close();
    }
    expect(await readdir(join(dir, 'data'))).toEqual(['pg']);
    // A second open resumes the directory: the template is not unpacked over it again.
    const again = await openDatabase({ kind: 'pglite', dataDir }, { pgliteTemplateFile: markedTemplate });
    try {
      expect(await again.many(markers)).toEqual([{ note: 'from the template' }, { note: 'written after' }]);
    } finally {
      await again.close();
    }
  });

  it('opens a database even where the template cannot be written (initdb in the process)', { timeout: 180_000 }, async () => {
    // A regular file where the cache directory would be: the template cannot be written below it.
    const blocked = join(dir, 'not-a-directory');
    await writeFile(blocked, '');
    const db = await openDatabase({ kind: 'pglite', dataDir: undefined }, { pgliteTemplateFile: join(blocked, 'template.tar') });
    try {
      expect((await migrate(db)).length).toBeGreaterThan(0);
    } finally {
      await db.close();
    }
  });

  it('builds a missing template from a fresh cluster, then uses it', { timeout: 180_000 }, async () => {
    const templateFile = join(dir, 'cache', 'built.tar');
    const db = await openDatabase({ kind: 'pglite', dataDir: undefined }, { pgliteTemplateFile: templateFile });
    try {
      expect(existsSync(templateFile)).toBe(true);
      expect(await readdir(join(dir, 'cache'))).toEqual(['built.tar']);
      expect(await db.one(tables)).toEqual({ n: 0 });
      expect((await migrate(db)).length).toBeGreaterThan(0);
    } finally {
      await db.close();
    }
    const fromBuilt = await openDatabase({ kind: 'pglite', dataDir: join(dir, 'from-built') }, { pgliteTemplateFile: templateFile });
    try {
      expect(await fromBuilt.one(tables)).toEqual({ n: 0 });
      expect((await migrate(fromBuilt)).length).toBeGreaterThan(0);
    } finally {
      await fromBuilt.close();
    }
  });
});
