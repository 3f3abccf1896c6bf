/**
 * Issue 34, point 4: `npm run ops -- verify-statement <programId> <YYYY-MM>` replays the period's
 * events from the event log (the embedded log's outbox, or Kafka) into a scratch store and prints
 * `match`, or the first difference once a stored entry is corrupted behind the trigger's back.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { sql, type Database } from '../../core/db.js';
import { createLogger } from '../../core/log.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import type { EventLog } from '../../processors/event-log/event-log.js';
import { createKafkaEventLog } from '../../processors/event-log/kafka.js';
import { topicsOf } from '../../processors/event-log/topics.js';
import { createRelay } from '../../processors/relay.js';
import { createTopics } from '../../processors/services.js';
import { verificationLines, verifyStatement } from '../../scripts/verify-statement.js';
import { databaseKinds } from '../support/databases.js';
import { dropTestTopics, kafkaBrokers, testKafkaConfig } from '../support/kafka.js';
import { moneyProgram, moneyTestApp, wholeMonth } from '../support/money.js';

const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const period = new Date().toISOString().slice(0, 7);

/** Changes one stored entry as only a superuser can: with triggers off (session_replication_role). */
async function corruptOneEntry(db: Database, programId: number) {
  await db.transaction(async (tx) => {
    await tx.many(sql('t.replica', `SET LOCAL session_replication_role = replica`));
    await tx.many(
      sql('t.corrupt', `UPDATE ledger_entries SET amount_minor = amount_minor - 1 WHERE id = (SELECT min(id) FROM ledger_entries WHERE program_id = $1 AND kind = 'commission')`),
      [programId],
    );
  });
}

describe.each(databaseKinds())('verify-statement (%s)', (kind) => {
  const money = moneyTestApp(kind);

  it('replays the embedded log (outbox) into a scratch store: match, then the first difference after a corruption', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    await wholeMonth(money.app, p);
    const ok = await verifyStatement({ db: money.db, logger }, p.programId, period);
    expect(ok).toMatchObject({ match: true, source: 'outbox', difference: undefined });
    expect(ok.events).toBeGreaterThanOrEqual(10);
    expect(verificationLines(ok)[0]).toBe('match');
    expect(ok.replayed.digest).toBe(ok.service.digest);

    await corruptOneEntry(money.db, p.programId);
    const bad = await verifyStatement({ db: money.db, logger }, p.programId, period);
    expect(bad.match).toBe(false);
    expect(bad.difference).toBe('statement.partners[0].closing: -4801 vs -4800');
    expect(verificationLines(bad).slice(0, 2)).toEqual(['mismatch', 'first difference (service vs event log): statement.partners[0].closing: -4801 vs -4800']);
  });

  it.skipIf(kind !== 'postgres')('npm run ops -- verify-statement prints match (the command, against the database of DATABASE_URL)', async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    await wholeMonth(money.app, p);
    const env = { ...process.env, DATABASE_URL: money.url!, KAFKA_BROKERS: '', LOG_LEVEL: 'error' };
    const run = promisify(execFile);
    const { stdout } = await run('npx', ['tsx', 'scripts/ops.ts', 'verify-statement', String(p.programId), period], { cwd: ROOT, env });
    expect(stdout.split('\n')[0]).toBe('match');
    await corruptOneEntry(money.db, p.programId);
    const failed = await run('npx', ['tsx', 'scripts/ops.ts', 'verify-statement', String(p.programId), period], { cwd: ROOT, env }).catch((e: { code: number; stdout: string }) => e);
    expect(failed).toMatchObject({ code: 2 });
    expect((failed as { stdout: string }).stdout.split('\n')[0]).toBe('mismatch');
  });
});

const BROKERS = kafkaBrokers();
const kind = databaseKinds().at(-1)!;

describe.skipIf(BROKERS.length === 0)(`verify-statement from Kafka (${kind})`, () => {
  const money = moneyTestApp(kind);
  const kafka = testKafkaConfig(BROKERS);
  const codec = createAvroCodec();

  afterAll(async () => {
    await dropTestTopics(kafka);
  });

  it('reads the events back from Kafka, a redelivered batch included, and matches; a corruption does not', { timeout: 180_000 }, async () => {
    const p = await moneyProgram(money.app, money.db, { holdDays: 0, minimum: 100 });
    await wholeMonth(money.app, p);
    const log = await createKafkaEventLog(kafka, logger);
    const topics = topicsOf(codec, kafka.topicPrefix);
    const encode = (row: Parameters<typeof codec.message>[0]) => {
      const m = codec.message(row);
      return { ...m, topic: topics.name(m.topic) };
    };
    await createTopics(kafka, codec, logger);
    // A relay that dies after publishing: its batch is in Kafka twice once the next relay publishes it again.
    const dying: EventLog = {
      publish: async (messages) => {
        await log.publish(messages);
        throw new Error('relay killed after publish');
      },
      close: async () => {},
    };
    // The relay takes only rows older than every open transaction of the cluster (processors/relay.ts):
    // while other work holds one open (another database on the same server), it answers idle; wait.
    const untilNotIdle = async (once: () => Promise<{ kind: string }>) => {
      for (let tries = 0; ; tries += 1) {
        const result = await once();
        if (result.kind !== 'idle' || tries >= 600) return result;
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const dyingRelay = createRelay({ db: money.db, log: dying, encode, deadLetterTopic: topics.deadLetter, batchSize: 1_000 });
    expect((await untilNotIdle(() => dyingRelay.relayOnce())).kind).toBe('retry');
    const relay = createRelay({ db: money.db, log, encode, deadLetterTopic: topics.deadLetter, batchSize: 1_000 });
    const unrelayed = sql('t.unrelayed', `SELECT count(*)::int AS n FROM outbox WHERE relayed_at IS NULL`);
    while ((await money.db.one<{ n: number }>(unrelayed))!.n > 0) expect((await untilNotIdle(() => relay.relayOnce())).kind).toBe('ok');
    await log.close();

    const ok = await verifyStatement({ db: money.db, kafka, logger }, p.programId, period);
    expect(ok, ok.difference).toMatchObject({ match: true, source: 'kafka' });
    await corruptOneEntry(money.db, p.programId);
    const bad = await verifyStatement({ db: money.db, kafka, logger }, p.programId, period);
    expect(bad).toMatchObject({ match: false, difference: 'statement.partners[0].closing: -4801 vs -4800' });
  });
});
