/**
 * The migration runner: numbered migrations once each, then the function files of functions/
 * whose content changed (every one of them after a numbered migration), in one transaction.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, sql } from '../../core/db.js';
import { migrate } from '../../core/migrate.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';

const q = {
  recorded: sql('test.migrate_recorded', `SELECT name, checksum, applied_at FROM schema_functions ORDER BY name`),
  twice: sql('test.migrate_twice', `SELECT answer_twice() AS n`),
  exists: sql('test.migrate_function_exists', `SELECT count(*)::int AS n FROM pg_proc WHERE proname = $1`),
  migrations: sql('test.migrate_versions', `SELECT version FROM schema_migrations ORDER BY version`),
  functionsTable: sql('test.migrate_functions_table', `SELECT to_regclass('schema_functions') IS NOT NULL AS present`),
};

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
// answer_twice calls the_answer, which sorts after it: applied in name order, its body is not checked at creation.
const twice = `CREATE OR REPLACE FUNCTION answer_twice() RETURNS int LANGUAGE sql STABLE AS $$ SELECT 2 * the_answer() $$;\n`;
const answer = (n: number) => `CREATE OR REPLACE FUNCTION the_answer() RETURNS int LANGUAGE sql STABLE AS $$ SELECT ${n} $$;\n`;

describe.each(databaseKinds())('migrate, on %s', (kind) => {
  let dir: string;
  let t: TestDatabase;
  const write = (file: string, text: string) => writeFile(join(dir, file), text);
  const recorded = async () => t.db.many<{ name: string; checksum: string; applied_at: Date }>(q.recorded);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-migrate-'));
    // Created from an empty directory: every step below is migrate's own.
    t = await createTestDatabase(kind, 2, dir);
    await mkdir(join(dir, 'functions'));
  });
  afterAll(async () => {
    await t?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('applies the numbered migrations, then each function file once, recording its SHA-256', async () => {
    await write('0001_numbers.sql', 'CREATE TABLE numbers (n int);');
    await write('functions/answer_twice.sql', twice);
    await write('functions/the_answer.sql', answer(41));
    expect(await migrate(t.db, dir)).toEqual(['0001_numbers.sql', 'functions/answer_twice.sql', 'functions/the_answer.sql']);
    expect((await recorded()).map(({ name, checksum }) => ({ name, checksum }))).toEqual([
      { name: 'answer_twice', checksum: sha256(twice) },
      { name: 'the_answer', checksum: sha256(answer(41)) },
    ]);
    expect(await t.db.one(q.twice)).toEqual({ n: 82 });
    expect(await migrate(t.db, dir)).toEqual([]);
  });

  it('applies again a changed file, and only it; an unchanged one keeps its checksum and time', async () => {
    const [twiceBefore, answerBefore] = await recorded();
    await write('functions/the_answer.sql', answer(42));
    expect(await migrate(t.db, dir)).toEqual(['functions/the_answer.sql']);
    const [twiceAfter, answerAfter] = await recorded();
    expect(twiceAfter).toEqual(twiceBefore);
    expect(answerAfter!.checksum).toBe(sha256(answer(42)));
    expect(answerAfter!.applied_at.getTime()).toBeGreaterThan(answerBefore!.applied_at.getTime());
    expect(await t.db.one(q.twice)).toEqual({ n: 84 });
  });

  it('applies every function file after a numbered migration, their text unchanged', async () => {
    const before = await recorded();
    await write('0002_more_numbers.sql', 'ALTER TABLE numbers ADD COLUMN m int;');
    expect(await migrate(t.db, dir)).toEqual(['0002_more_numbers.sql', 'functions/answer_twice.sql', 'functions/the_answer.sql']);
    const after = await recorded();
    expect(after.map((r) => r.checksum)).toEqual(before.map((r) => r.checksum));
    after.forEach((r, i) => expect(r.applied_at.getTime()).toBeGreaterThan(before[i]!.applied_at.getTime()));
  });

  it('forgets a removed file but does not drop its function: a numbered migration does', async () => {
    await unlink(join(dir, 'functions/answer_twice.sql'));
    expect(await migrate(t.db, dir)).toEqual([]);
    expect((await recorded()).map((r) => r.name)).toEqual(['the_answer']);
    expect(await t.db.one(q.exists, ['answer_twice'])).toEqual({ n: 1 });
    await write('0003_drop_answer_twice.sql', 'DROP FUNCTION answer_twice();');
    expect(await migrate(t.db, dir)).toEqual(['0003_drop_answer_twice.sql', 'functions/the_answer.sql']);
    expect(await t.db.one(q.exists, ['answer_twice'])).toEqual({ n: 0 });
  });

  it('a file that fails names itself, and rolls back the whole run, numbered migrations included', async () => {
    await write('0004_letters.sql', 'CREATE TABLE letters (c text);');
    await write('functions/broken.sql', 'CREATE OR REPLACE FUNCTION broken() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$ nonsense;\n');
    await expect(migrate(t.db, dir)).rejects.toThrow(/^functions\/broken\.sql: syntax error/);
    expect(await t.db.many(q.migrations)).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }]);
    expect((await recorded()).map((r) => r.name)).toEqual(['the_answer']);
    await unlink(join(dir, 'functions/broken.sql'));
    expect(await migrate(t.db, dir)).toEqual(['0004_letters.sql', 'functions/the_answer.sql']);
  });

  it.each([
    ['a SQL body naming a column that does not exist', 'LANGUAGE sql AS $$ SELECT no_such_column FROM numbers $$', /column "no_such_column" does not exist/],
    ['a PL/pgSQL body that does not compile', 'LANGUAGE plpgsql AS $$ BEGIN RETURN 1 END $$', /syntax error/],
  ])('checks the bodies once every file is applied: %s fails the start', async (_, body, error) => {
    await write('functions/broken.sql', `CREATE OR REPLACE FUNCTION broken() RETURNS int ${body};\n`);
    await expect(migrate(t.db, dir)).rejects.toThrow(new RegExp(`^functions/broken\\.sql: ${error.source}`));
    expect(await t.db.one(q.exists, ['broken'])).toEqual({ n: 0 });
    await unlink(join(dir, 'functions/broken.sql'));
  });

  it.runIf(kind === 'postgres')('two processes starting at once: one applies, the other waits on the lock and finds nothing to do', async () => {
    await write('0005_words.sql', 'CREATE TABLE words (w text);');
    await write('functions/the_answer.sql', answer(43));
    const other = await openDatabase({ kind: 'postgres', url: t.url!, poolSize: 1 });
    try {
      const runs = await Promise.all([migrate(t.db, dir), migrate(other, dir)]);
      expect(runs.map((r) => r.length).sort()).toEqual([0, 2]);
      expect(runs.flat()).toEqual(['0005_words.sql', 'functions/the_answer.sql']);
    } finally {
      await other.close();
    }
  });
});

describe.each(databaseKinds())('migrate under a live connection, on %s', (kind) => {
  let dir: string;
  let t: TestDatabase;
  const bump = sql('test.migrate_bump', `SELECT bump(1) AS n`);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ats-migrate-live-'));
    await mkdir(join(dir, 'functions'));
    await writeFile(join(dir, '0001_tallies.sql'), 'CREATE TABLE tallies (id int PRIMARY KEY, amount int); INSERT INTO tallies VALUES (1, 0);');
    // A row variable: its cached plans are typed as the row's columns were when the connection compiled it.
    await writeFile(
      join(dir, 'functions/bump.sql'),
      `CREATE OR REPLACE FUNCTION bump(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  t tallies;
BEGIN
  SELECT * INTO t FROM tallies WHERE id = p;
  UPDATE tallies SET amount = t.amount + 1 WHERE id = t.id RETURNING * INTO t;
  RETURN t.amount;
END
$$;
`,
    );
    // One connection: the calls before and after the migration run on the same backend.
    t = await createTestDatabase(kind, 1, dir);
  });
  afterAll(async () => {
    await t?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a connection that ran a function before a migration changed the types it reads runs it after', async () => {
    expect(await t.db.one(bump)).toEqual({ n: 1 });
    await writeFile(join(dir, '0002_tallies_as_domain.sql'), 'CREATE DOMAIN tally AS int CHECK (VALUE >= 0); ALTER TABLE tallies ALTER COLUMN amount TYPE tally;');
    expect(await migrate(t.db, dir)).toEqual(['0002_tallies_as_domain.sql', 'functions/bump.sql']);
    expect(await t.db.one(bump)).toEqual({ n: 2 });
  });
});

describe('migrate from a directory without functions/ (a schema from before them)', () => {
  it('applies the numbered migrations and leaves no schema_functions table, as the runner before it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ats-migrate-old-'));
    const db = await openDatabase({ kind: 'pglite', dataDir: undefined });
    try {
      await writeFile(join(dir, '0001_numbers.sql'), 'CREATE TABLE numbers (n int);');
      expect(await migrate(db, dir)).toEqual(['0001_numbers.sql']);
      expect(await db.one(q.functionsTable)).toEqual({ present: false });
    } finally {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
