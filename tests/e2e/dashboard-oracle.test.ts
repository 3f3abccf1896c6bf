import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { buildTestApp } from '../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';
import { embeddedDelivery, runPerformanceOracle } from '../support/oracle.js';

/*
 * GET /api/tracking/performance from the warehouse equals the same response computed from the
 * Postgres state, for random histories, every period and random ranges. Replay a failure with
 * ORACLE_SEED=<seed printed in the failure>.
 */
const SEED = process.env.ORACLE_SEED ? Number(process.env.ORACLE_SEED) : Math.floor(Math.random() * 2 ** 31);

let dir: string;
let warehouse: Warehouse;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ats-oracle-'));
  warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
  await migrateWarehouse(warehouse);
  // Redelivered duplicates stay as separate rows, as they may at any moment on a real server:
  // only FINAL and distinct counts keep them from counting twice.
  await warehouse.command(sql('t.oracle_stop_merges', 'SYSTEM STOP MERGES'));
});
afterAll(async () => {
  await warehouse?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each(databaseKinds())('performance oracle on %s, through the embedded relay and loader', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let now: number | undefined;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    // One warehouse for the file: Postgres numbers its programs apart from PGlite's.
    if (kind === 'postgres') await t.db.many(sql('t.oracle_program_ids_apart', `ALTER SEQUENCE programs_id_seq RESTART WITH 1000000`));
    app = await buildTestApp(t.db, undefined, () => now ?? Date.now(), warehouse);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  it(`the warehouse's answers equal the Postgres reference (seed ${SEED})`, { timeout: 300_000 }, async () => {
    const compared = await runPerformanceOracle({
      app,
      db: t.db,
      deliver: embeddedDelivery(warehouse, { redeliverySeed: SEED }),
      setNow: (ms) => {
        now = ms;
      },
      seed: kind === 'pglite' ? SEED : SEED + 1,
      histories: kind === 'pglite' ? 3 : 2,
      steps: 45,
    });
    expect(compared).toBeGreaterThan(0);
  });
});
