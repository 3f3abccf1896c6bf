import { copyFile, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql, type Database } from '../../core/db.js';

/**
 * The numbered migrations as they were before the SQL functions moved to
 * schemas/postgres/functions/ (issue 28), verbatim: a database that ran the old migrations.
 */
export const FIXTURE_0024 = fileURLToPath(new URL('../fixtures/postgres-0024/', import.meta.url));

/** A copy of the fixture's migrations before `file`: a database as an older version left it. Remove it afterwards. */
export async function fixtureBefore(file: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ats-migrations-'));
  for (const name of (await readdir(FIXTURE_0024)).filter((n) => n.endsWith('.sql') && n < file)) {
    await copyFile(join(FIXTURE_0024, name), join(dir, name));
  }
  return dir;
}

const AUDIT_LOG = fileURLToPath(new URL('../../schemas/postgres/0031_audit_log.sql', import.meta.url));

/**
 * Today's brand-side writes append audit entries (0031, issue 32), so the admin calls that set up an
 * old schema's data with today's code (program, key, partner, processor connection) need its table:
 * made before them, dropped before the upgrade makes it again. The writes under test never touch it.
 */
export const auditLogForOldSchema = {
  async create(db: Database): Promise<void> {
    const text = await readFile(AUDIT_LOG, 'utf8');
    await db.transaction((tx) => tx.script(text));
  },
  async drop(db: Database): Promise<void> {
    await db.many(sql('test.drop_audit_log', 'DROP TABLE audit_log'));
  },
};
