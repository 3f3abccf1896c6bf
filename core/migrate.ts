import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql, type Database, type Transaction } from './db.js';

export const POSTGRES_MIGRATIONS_DIR = fileURLToPath(new URL('../schemas/postgres/', import.meta.url));

const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;
/** The live definition of one SQL function (its overloads included), named after it. */
const FUNCTION_FILE = /^([a-z0-9_]+)\.sql$/;
const FUNCTIONS_SUBDIR = 'functions';

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
  // Created under the lock, in the migrations' transaction: only a directory with functions/ has one.
  createFunctionsTable: sql(
    'migrations.create_functions_table',
    `CREATE TABLE IF NOT EXISTS schema_functions (
       name text PRIMARY KEY,
       checksum text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT now()
     )`,
  ),
  functionChecksums: sql('migrations.function_checksums', `SELECT name, checksum FROM schema_functions`),
  // As pg_dump does: bodies are not checked at creation, so the files may call each other in any
  // order; each is checked once all exist (validate). Local to this transaction.
  checkBodies: sql('migrations.check_bodies', `SELECT set_config('check_function_bodies', $1, true)`),
  // The language's own check, as CREATE FUNCTION runs it: a SQL body is parsed and analysed (the
  // tables, columns and functions it names), a PL/pgSQL one compiled.
  validate: sql(
    'migrations.validate_function',
    `SELECT CASE l.lanname WHEN 'sql' THEN fmgr_sql_validator(p.oid) WHEN 'plpgsql' THEN plpgsql_validator(p.oid) END
       FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
      WHERE p.pronamespace = current_schema()::regnamespace AND p.proname = $1`,
  ),
  recordFunctions: sql(
    'migrations.record_functions',
    `INSERT INTO schema_functions (name, checksum)
     SELECT * FROM unnest($1::text[], $2::text[])
     ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()`,
  ),
  // A file removed from functions/ is forgotten; its function stays until a numbered migration drops it.
  forgetFunctions: sql('migrations.forget_functions', `DELETE FROM schema_functions WHERE name <> ALL ($1::text[])`),
};

/**
 * Applies the numbered migrations not yet applied, in order, then the function files of
 * `<dir>/functions/` whose content changed since they were last applied (every one of them after
 * any numbered migration), all in one transaction under one advisory lock. Returns the files
 * applied: numbered ones by name, then `functions/<name>.sql`.
 */
export async function migrate(db: Database, dir = POSTGRES_MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => MIGRATION_FILE.test(f)).sort();
  const functions = await readFunctionFiles(join(dir, FUNCTIONS_SUBDIR));
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
    if (functions) applied.push(...(await applyFunctions(tx, functions, applied.length > 0)));
    return applied;
  });
}

interface FunctionFile {
  name: string;
  text: string;
  checksum: string;
}

/** undefined when there is no functions/ directory (a schema from before them, as a test fixture). */
async function readFunctionFiles(dir: string): Promise<FunctionFile[] | undefined> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((f) => FUNCTION_FILE.test(f)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return Promise.all(
    names.map(async (file) => {
      const text = await readFile(join(dir, file), 'utf8');
      return { name: FUNCTION_FILE.exec(file)![1]!, text, checksum: createHash('sha256').update(text).digest('hex') };
    }),
  );
}

/**
 * CREATE OR REPLACE of each changed file, or of all of them when `all`: after a numbered migration
 * a function's catalog row must change even when its text did not, so that every connection
 * compiles it again instead of running plans made for the tables as they were.
 */
async function applyFunctions(tx: Transaction, files: FunctionFile[], all: boolean): Promise<string[]> {
  await tx.many(q.createFunctionsTable);
  const recorded = new Map((await tx.many<{ name: string; checksum: string }>(q.functionChecksums)).map((r) => [r.name, r.checksum]));
  await tx.many(q.forgetFunctions, [files.map((f) => f.name)]);
  const due = files.filter((f) => all || recorded.get(f.name) !== f.checksum);
  if (due.length === 0) return [];
  await tx.many(q.checkBodies, ['off']);
  for (const f of due) await inFile(f, () => tx.script(`/* function.${f.name} */\n${f.text}`));
  await tx.many(q.checkBodies, ['on']);
  for (const f of due) await inFile(f, () => tx.many(q.validate, [f.name]));
  await tx.many(q.recordFunctions, [due.map((f) => f.name), due.map((f) => f.checksum)]);
  return due.map((f) => `${FUNCTIONS_SUBDIR}/${f.name}.sql`);
}

/** An error of a function file names the file. */
async function inFile(f: FunctionFile, step: () => Promise<unknown>): Promise<void> {
  try {
    await step();
  } catch (err) {
    throw new Error(`${FUNCTIONS_SUBDIR}/${f.name}.sql: ${(err as Error).message}`, { cause: err });
  }
}
