import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { buildTestApp } from '../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';
import { embeddedDelivery, runPortalOracle } from '../support/oracle.js';
import { createTestWarehouse, type TestWarehouse } from '../support/warehouses.js';

/*
 * Issue 31, point 2: the partner portal's performance (GET /api/partner/v1/programs/:programId/performance)
 * equals the brand's dashboard figures kept to that partner, computed from the Postgres state, for
 * random histories with several partners per program, every preset and random ranges, through the
 * real pipeline (outbox, embedded relay and loader, chDB). Replay with ORACLE_SEED=<seed>.
 */
const SEED = process.env.ORACLE_SEED ? Number(process.env.ORACLE_SEED) : Math.floor(Math.random() * 2 ** 31);

describe('the portal performance oracle on chDB, through the embedded relay and loader', () => {
  let wh: TestWarehouse;
  beforeAll(async () => {
    wh = await createTestWarehouse('chdb');
    await wh.stopMerges();
  });
  afterAll(async () => {
    await wh?.drop();
  });

  describe.each(databaseKinds())('on %s', (kind) => {
    let t: TestDatabase;
    let app: FastifyInstance;
    let now: number | undefined;
    beforeAll(async () => {
      t = await createTestDatabase(kind);
      if (kind === 'postgres') await t.db.many(sql('t.portal_oracle_ids_apart', `ALTER SEQUENCE programs_id_seq RESTART WITH 2000000`));
      app = await buildTestApp(t.db, undefined, () => now ?? Date.now(), wh.warehouse);
    });
    afterAll(async () => {
      await app?.close();
      await t?.drop();
    });

    it(`each partner's portal figures equal the reference kept to that partner (seed ${SEED})`, { timeout: 300_000 }, async () => {
      const compared = await runPortalOracle({
        app,
        db: t.db,
        deliver: embeddedDelivery(wh.warehouse, { redeliverySeed: SEED }),
        setNow: (ms) => {
          now = ms;
        },
        seed: kind === 'pglite' ? SEED : SEED + 1,
        histories: 2,
        steps: 60,
      });
      expect(compared).toBeGreaterThan(0);
    });
  });
});
