import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../core/db.js';
import { migrate } from '../../core/migrate.js';

export type DatabaseKind = 'pglite' | 'postgres';

const TEST_DATABASE = /^ats_test_[a-z0-9_]+$/;

/**
 * PGlite always; real Postgres whenever DATABASE_URL is set. In CI a missing DATABASE_URL is an
 * error, not a reason to skip: the Postgres half of the suite must run there.
 */
export function databaseKinds(): DatabaseKind[] {
  if (process.env.CI && !process.env.DATABASE_URL) {
    throw new Error('CI is set but DATABASE_URL is not: the Postgres tests cannot be skipped in CI');
  }
  return process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}

export interface TestDatabase {
  db: Database;
  kind: DatabaseKind;
  /** For a second pool on the same database (several ingest processes). */
  url: string | undefined;
  drop(): Promise<void>;
}

function adminUrl(): string {
  return process.env.DATABASE_URL!;
}

function urlFor(name: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A fresh, migrated database; on Postgres one named ats_test_<random>, dropped afterwards.
 * `migrationsDir`: migrate from that directory instead (an older schema, for upgrade tests).
 */
export async function createTestDatabase(kind: DatabaseKind, poolSize = 20, migrationsDir?: string): Promise<TestDatabase> {
  if (kind === 'pglite') {
    const db = await openDatabase({ kind: 'pglite', dataDir: undefined });
    await migrate(db, migrationsDir);
    return { db, kind, url: undefined, drop: () => db.close() };
  }
  const name = `ats_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = urlFor(name);
  const db = await openDatabase({ kind: 'postgres', url, poolSize });
  await migrate(db, migrationsDir);
  return {
    db,
    kind,
    url,
    drop: async () => {
      await db.close();
      await dropTestDatabase(name);
    },
  };
}

/** Destructive: refuses any database not named for tests. */
export async function dropTestDatabase(name: string): Promise<void> {
  if (!TEST_DATABASE.test(name)) throw new Error(`refusing to drop ${name}: not a test database`);
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
