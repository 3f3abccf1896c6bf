import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { buildTestApp } from '../support/app.js';
import { createTestDatabase, databaseKinds, type DatabaseKind, type TestDatabase } from '../support/databases.js';
import { embeddedDelivery, runPerformanceOracle } from '../support/oracle.js';
import { createTestWarehouse, warehouseKinds, type TestWarehouse, type WarehouseKind } from '../support/warehouses.js';

/*
 * GET /api/tracking/performance from the warehouse equals the same response computed from the
 * Postgres state, for random histories, every period and random ranges. Replay a failure with
 * ORACLE_SEED=<seed printed in the failure>. The warehouse is chDB (embedded) with each database
 * kind, and the ClickHouse server over HTTP (CLICKHOUSE_TEST_URL) with the distributed mode's
 * database, real Postgres (PGlite where none is configured).
 */
const SEED = process.env.ORACLE_SEED ? Number(process.env.ORACLE_SEED) : Math.floor(Math.random() * 2 ** 31);

const pairs: [WarehouseKind, DatabaseKind][] = warehouseKinds().flatMap((w) =>
  w === 'chdb' ? databaseKinds().map((d): [WarehouseKind, DatabaseKind] => [w, d]) : [[w, databaseKinds().at(-1)!]],
);

describe.each(warehouseKinds())('on the %s warehouse', (warehouseKind) => {
  let wh: TestWarehouse;
  beforeAll(async () => {
    // One warehouse per kind: Postgres numbers its programs apart from PGlite's.
    wh = await createTestWarehouse(warehouseKind);
    await wh.stopMerges();
  });
  afterAll(async () => {
    await wh?.drop();
  });

  describe.each(pairs.filter(([w]) => w === warehouseKind).map(([, d]) => d))('performance oracle on %s, through the embedded relay and loader', (kind) => {
    let t: TestDatabase;
    let app: FastifyInstance;
    let now: number | undefined;

    beforeAll(async () => {
      t = await createTestDatabase(kind);
      if (kind === 'postgres') await t.db.many(sql('t.oracle_program_ids_apart', `ALTER SEQUENCE programs_id_seq RESTART WITH 1000000`));
      app = await buildTestApp(t.db, undefined, () => now ?? Date.now(), wh.warehouse);
    });
    afterAll(async () => {
      await app?.close();
      await t?.drop();
    });

    it(`the warehouse's answers equal the Postgres reference (seed ${SEED})`, { timeout: 300_000 }, async () => {
      const compared = await runPerformanceOracle({
        app,
        db: t.db,
        deliver: embeddedDelivery(wh.warehouse, { redeliverySeed: SEED }),
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
});
