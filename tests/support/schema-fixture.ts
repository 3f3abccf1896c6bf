import { copyFile, mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
