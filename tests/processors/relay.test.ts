import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import type { LogMessage } from '../../processors/event-log/event-log.js';
import { createInProcessLog, type InProcessLog } from '../../processors/event-log/in-process-log.js';
import { createRelay } from '../../processors/relay.js';
import type { OutboxRow } from '../../schemas/event-contract.js';
import { buildTestApp, createTestProgram, freshIp, type TestProgram } from '../support/app.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/databases.js';

const TOPIC = 'outbox.test';
const DEAD = 'outbox.dead-letter';
/** The relay's contract is bytes in, bytes out; JSON keeps these tests independent of the Avro codec. */
const encode = (row: OutboxRow): LogMessage => {
  if (row.payload.poison) throw new Error('payload does not fit its schema');
  return { topic: TOPIC, key: row.aggregate_key, value: Buffer.from(JSON.stringify({ id: row.id, event_id: row.event_id })) };
};
const relayed = (log: InProcessLog) => log.read(TOPIC).map((m) => JSON.parse(m.value.toString()) as { id: number; event_id: string });

const clickOn = (app: FastifyInstance, program: TestProgram) =>
  app.inject({
    method: 'POST',
    url: '/api/v1/track/click',
    headers: { 'x-forwarded-for': freshIp() },
    payload: { affiliate_url: `https://shop.test.example/?aff=${program.affCode}` },
  });

const q = {
  unrelayed: sql('t.relay_unrelayed', `SELECT count(*) AS n FROM outbox WHERE relayed_at IS NULL`),
  all: sql('t.relay_all', `SELECT id, event_id FROM outbox ORDER BY txid, id`),
  heldBack: sql(
    't.relay_held_back',
    `SELECT count(*)::int AS n FROM outbox WHERE relayed_at IS NULL AND txid >= pg_snapshot_xmin(pg_current_snapshot())`,
  ),
  markAll: sql('t.relay_mark_all', `UPDATE outbox SET relayed_at = now() WHERE relayed_at IS NULL`),
  poison: sql(
    't.relay_poison',
    `INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
     VALUES ('click.recorded', 'poison', 1, false, now(), '{"poison": true}')`,
  ),
};

/**
 * The relay holds back rows newer than the oldest transaction running anywhere on the server, and the
 * other test files run transactions on the same server: wait until none of theirs holds ours back.
 */
async function settled(db: TestDatabase['db']): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (((await db.one<{ n: number }>(q.heldBack))?.n ?? 0) > 0) {
    if (Date.now() > deadline) throw new Error('outbox rows still held back by a running transaction after 30 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(databaseKinds())('outbox relay on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    program = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });
  beforeEach(async () => {
    await t.db.many(q.markAll);
  });

  const click = () => clickOn(app, program);

  it('publishes every committed event once, in commit order, and marks it', async () => {
    const log = createInProcessLog();
    const relay = createRelay({ db: t.db, log, encode, deadLetterTopic: DEAD, batchSize: 7 });
    for (let i = 0; i < 20; i++) expect((await click()).statusCode).toBe(200);
    const expected = (await t.db.many<{ id: number; event_id: string }>(q.all)).slice(-20);
    await settled(t.db);
    let rounds = 0;
    while ((await relay.relayOnce()).kind === 'ok') rounds += 1;
    expect(rounds).toBe(3);
    expect(relayed(log)).toEqual(expected);
    expect(await t.db.one(q.unrelayed)).toEqual({ n: 0 });
    expect((await relay.relayOnce()).kind).toBe('idle');
  });

  it('a failed publish rolls back: nothing is marked, and the next round publishes the batch', async () => {
    const log = createInProcessLog();
    let fail = true;
    const flaky = { ...log, publish: async (m: LogMessage[]) => (fail ? Promise.reject(new Error('broker down')) : log.publish(m)) };
    const relay = createRelay({ db: t.db, log: flaky, encode, deadLetterTopic: DEAD });
    await click();
    await settled(t.db);
    const result = await relay.relayOnce();
    expect(result.kind).toBe('retry');
    expect(await t.db.one(q.unrelayed)).toEqual({ n: 1 });
    fail = false;
    expect(await relay.relayOnce()).toEqual({ kind: 'ok', relayed: 1, deadLettered: 0 });
    expect(log.read(TOPIC)).toHaveLength(1);
  });

  it('a row that cannot be encoded goes to the dead-letter topic with the reason, and the relay goes on', async () => {
    const log = createInProcessLog();
    const relay = createRelay({ db: t.db, log, encode, deadLetterTopic: DEAD });
    await click();
    await t.db.many(q.poison);
    await click();
    await settled(t.db);
    expect(await relay.relayOnce()).toEqual({ kind: 'ok', relayed: 3, deadLettered: 1 });
    expect(log.read(TOPIC)).toHaveLength(2);
    const dead = JSON.parse(log.read(DEAD)[0]!.value.toString());
    expect(dead).toMatchObject({ stage: 'relay.encode', reason: 'payload does not fit its schema', row: { aggregate_key: 'poison' } });
  });

});

// PGlite runs one transaction at a time, so transactions can only overlap on a real Postgres.
describe.each(databaseKinds().filter((k) => k === 'postgres'))('outbox relay with concurrent transactions on %s', (kind) => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let program: TestProgram;

  beforeAll(async () => {
    t = await createTestDatabase(kind);
    app = await buildTestApp(t.db);
    program = await createTestProgram(app, t.db);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });
  beforeEach(async () => {
    await t.db.many(q.markAll);
  });

  const click = () => clickOn(app, program);

  it('never skips a row whose transaction commits after a later one', async () => {
    const log = createInProcessLog();
    const relay = createRelay({ db: t.db, log, encode, deadLetterTopic: DEAD });
    const slow = new pg.Client({ connectionString: t.url });
    await slow.connect();
    try {
      // A long transaction takes its id first and writes its event, but commits last.
      await slow.query('BEGIN');
      await slow.query(
        `INSERT INTO outbox (event_type, aggregate_key, program_id, test, occurred_at, payload)
         VALUES ('click.recorded', 'slow', $1, false, now(), '{}')`,
        [program.programId],
      );
      for (let i = 0; i < 5; i++) expect((await click()).statusCode).toBe(200);
      // The short transactions committed, but they are newer than one still running: held back.
      expect((await relay.relayOnce()).kind).toBe('idle');
      await slow.query('COMMIT');
      await settled(t.db);
      while ((await relay.relayOnce()).kind === 'ok');
      const ids = relayed(log).map((r) => r.id);
      const all = (await t.db.many<{ id: number }>(q.all)).slice(-6).map((r) => r.id);
      expect(ids).toEqual(all);
      expect(ids).toHaveLength(6);
      expect(await t.db.one(q.unrelayed)).toEqual({ n: 0 });
    } finally {
      await slow.end();
    }
  });

  it('two relays at once: one works, the other stands by, nothing is published twice', async () => {
    const log = createInProcessLog();
    let release!: () => void;
    let entered!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const inPublish = new Promise<void>((resolve) => (entered = resolve));
    const held = {
      ...log,
      publish: async (m: LogMessage[]) => {
        entered();
        await gate;
        await log.publish(m);
      },
    };
    const first = createRelay({ db: t.db, log: held, encode, deadLetterTopic: DEAD });
    const second = createRelay({ db: t.db, log, encode, deadLetterTopic: DEAD });
    for (let i = 0; i < 3; i++) await click();
    await settled(t.db);
    const running = first.relayOnce();
    await inPublish; // the first relay holds the lock from here until its batch is marked
    expect((await second.relayOnce()).kind).toBe('busy');
    release();
    expect(await running).toEqual({ kind: 'ok', relayed: 3, deadLettered: 0 });
    expect((await second.relayOnce()).kind).toBe('idle');
    expect(log.read(TOPIC)).toHaveLength(3);
  });
});
