import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { sql, type Database } from './db.js';

export const POSTGRES_MIGRATIONS_DIR = fileURLToPath(new URL('../schemas/postgres/', import.meta.url));

const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

const q = {
  createTable: sql(
    'migrations.create_table',
    `CREATE TABLE IF NOT EXISTS schema_migrations (
       version integer PRIMARY KEY,
       name text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT now()
     )`,
  ),
  // Serializes concurrent starters (several ingest processes) on real Postgres.
  lock: sql('migrations.lock', `SELECT pg_advisory_xact_lock(727274001)`),
  applied: sql('migrations.applied', `SELECT version FROM schema_migrations`),
  record: sql('migrations.record', `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`),
};

/** Applies the numbered migrations not yet applied, in order, in one transaction. Returns their names. */
export async function migrate(db: Database, dir = POSTGRES_MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => MIGRATION_FILE.test(f)).sort();
  await db.many(q.createTable);
  return db.transaction(async (tx) => {
    await tx.many(q.lock);
    const done = new Set((await tx.many<{ version: number }>(q.applied)).map((r) => r.version));
    const applied: string[] = [];
    for (const file of files) {
      const [, version, name] = MIGRATION_FILE.exec(file)!;
      if (done.has(Number(version))) continue;
      const text = await readFile(`${dir}/${file}`, 'utf8');
      // Scripts run through the transaction's connection so a failure rolls every migration back.
      await tx.script(`/* migration.${version} */\n${text}`);
      await tx.many(q.record, [Number(version), name]);
      applied.push(file);
    }
    return applied;
  });
}
