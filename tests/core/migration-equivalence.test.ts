/**
 * The numbered migrations without their functions, plus schemas/postgres/functions/, give exactly
 * the schema the numbered migrations gave when they defined the functions (the verbatim fixture
 * tests/fixtures/postgres-0024/): the same tables, columns, types, constraints, indexes, domains
 * and function definitions. So does upgrading a database that an older version left at any of the
 * migrations that created, redefined or dropped a function.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Database } from '../../core/db.js';
import { migrate } from '../../core/migrate.js';
import { createTestDatabase, databaseKinds, type DatabaseKind, type TestDatabase } from '../support/databases.js';
import { FIXTURE_0024, fixtureBefore } from '../support/schema-fixture.js';

// The runner's own record of the function files: a database built by the old migrations has none.
const BOOKKEEPING = `'schema_functions', 'schema_functions_pkey'`;

const catalog = {
  relations: sql(
    'test.catalog_relations',
    `SELECT c.relname, c.relkind::text, c.relpersistence::text
       FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relname NOT IN (${BOOKKEEPING})
      ORDER BY c.relname`,
  ),
  columns: sql(
    'test.catalog_columns',
    `SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull,
            pg_get_expr(d.adbin, d.adrelid) AS default, a.attidentity::text, a.attgenerated::text, a.attcollation::regcollation::text
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm') AND a.attnum > 0 AND NOT a.attisdropped
        AND c.relname NOT IN (${BOOKKEEPING})
      ORDER BY c.relname, a.attnum`,
  ),
  constraints: sql(
    'test.catalog_constraints',
    `SELECT coalesce(r.relname, t.typname) AS owner, con.conname, con.contype::text, pg_get_constraintdef(con.oid) AS definition,
            con.condeferrable, con.convalidated
       FROM pg_constraint con LEFT JOIN pg_class r ON r.oid = con.conrelid LEFT JOIN pg_type t ON t.oid = con.contypid
      WHERE con.connamespace = 'public'::regnamespace AND coalesce(r.relname, '') NOT IN (${BOOKKEEPING})
      ORDER BY 1, 2`,
  ),
  indexes: sql(
    'test.catalog_indexes',
    `SELECT indexname, indexdef
       FROM pg_indexes WHERE schemaname = 'public' AND tablename NOT IN (${BOOKKEEPING}) ORDER BY indexname`,
  ),
  types: sql(
    'test.catalog_types',
    `SELECT t.typname, t.typtype::text, format_type(t.typbasetype, t.typtypmod) AS base, t.typnotnull, t.typdefault,
            (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid) AS labels
       FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace AND t.typtype IN ('d', 'e', 'r', 'm')
      ORDER BY t.typname`,
  ),
  functions: sql(
    'test.catalog_functions',
    `SELECT p.oid::regprocedure::text AS signature, pg_get_functiondef(p.oid) AS definition, p.prokind::text, p.provolatile::text,
            p.proparallel::text, p.procost, p.prorows, p.proisstrict, p.prosecdef, p.proleakproof, p.proconfig, p.proacl::text[],
            obj_description(p.oid, 'pg_proc') AS comment
       FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1`,
  ),
  triggers: sql(
    'test.catalog_triggers',
    `SELECT tg.tgname, pg_get_triggerdef(tg.oid) AS definition
       FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid
      WHERE c.relnamespace = 'public'::regnamespace AND NOT tg.tgisinternal ORDER BY 1`,
  ),
  sequences: sql(
    'test.catalog_sequences',
    `SELECT sequencename, data_type::text, start_value, increment_by, max_value, min_value, cycle
       FROM pg_sequences WHERE schemaname = 'public' ORDER BY 1`,
  ),
  extensions: sql('test.catalog_extensions', `SELECT extname FROM pg_extension ORDER BY 1`),
  migrations: sql('test.catalog_migrations', `SELECT version, name FROM schema_migrations ORDER BY version`),
};

/** Everything the schema is made of, in a comparable form. */
async function schemaOf(db: Database): Promise<Record<keyof typeof catalog, unknown[]>> {
  const entries = await Promise.all(Object.entries(catalog).map(async ([part, query]) => [part, await db.many(query)] as const));
  return Object.fromEntries(entries) as Record<keyof typeof catalog, unknown[]>;
}

/** Where an older version could leave a database: before each migration that created, redefined or dropped a function. */
const UPGRADE_FROM = [
  '0012_record_sale.sql',
  '0016_connected_programs.sql',
  '0017_stable_event_builders.sql',
  '0020_record_sale_fewer_statements.sql',
  '0021_refund_sale_lookup.sql',
  '0023_tracking_checks_as_domains.sql',
  '0024_processor_account_owners.sql',
];

describe.each(databaseKinds())('the schema from the stripped migrations and functions/, on %s', (kind: DatabaseKind) => {
  let fresh: TestDatabase;
  let today: TestDatabase;
  let expected: Awaited<ReturnType<typeof schemaOf>>;
  let fixture: Awaited<ReturnType<typeof schemaOf>>;

  beforeAll(async () => {
    fresh = await createTestDatabase(kind, 2);
    today = await createTestDatabase(kind, 2, FIXTURE_0024);
    fixture = await schemaOf(today.db);
    // The migrations added since (0025 on) and the function files as they are now, applied at start.
    await migrate(today.db);
    expected = await schemaOf(today.db);
  });
  afterAll(async () => {
    await fresh?.drop();
    await today?.drop();
  });

  it('is exactly the schema of the migrations that defined the functions, upgraded by the migrations since', async () => {
    expect(fixture.functions.length).toBe(25);
    expect(fixture.migrations.length).toBe(22);
    expect(expected.types.length).toBeGreaterThan(0);
    expect(await schemaOf(fresh.db)).toEqual(expected);
  });

  it.each(UPGRADE_FROM)('is what a database left before %s becomes when the service starts', { timeout: 120_000 }, async (file) => {
    const dir = await fixtureBefore(file);
    const old = await createTestDatabase(kind, 2, dir);
    try {
      expect(await schemaOf(old.db)).not.toEqual(expected);
      await migrate(old.db);
      expect(await schemaOf(old.db)).toEqual(expected);
    } finally {
      await old.drop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
