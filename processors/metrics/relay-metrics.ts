/**
 * What the relay is measured by: events published per topic, the events it could not encode
 * (dead letters), and the outbox backlog it has yet to publish.
 */
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { sql, type Queryable } from '../../core/db.js';
import type { EventLog, LogMessage } from '../event-log/event-log.js';

export const RELAY_METRIC_NAMES = {
  relayed: 'ats_events_relayed_total',
  backlogAge: 'ats_relay_backlog_oldest_age_seconds',
  backlogEvents: 'ats_relay_backlog_events',
} as const;

/*
 * Every unrelayed row counts, including rows of transactions the relay cannot take yet. The
 * partial index outbox_unrelayed covers exactly these rows, so the query reads only the backlog.
 * created_at is when the row entered the outbox (occurred_at is the business time, which may lie
 * in the past), so the age is how long the oldest event has waited for the relay.
 */
const backlogSql = sql(
  'metrics.relay_backlog',
  `SELECT count(*) AS events,
          coalesce(extract(epoch FROM clock_timestamp() - min(created_at)), 0) AS oldest_age_seconds
     FROM outbox
    WHERE relayed_at IS NULL`,
);

export interface RelayBacklog {
  events: number;
  oldestAgeSeconds: number;
}

/** Reads the relay backlog: the count of unrelayed outbox events and the age of the oldest. */
async function readRelayBacklog(db: Queryable): Promise<RelayBacklog> {
  const row = await db.one<{ events: number; oldest_age_seconds: number }>(backlogSql);
  return { events: Number(row?.events ?? 0), oldestAgeSeconds: Math.max(0, Number(row?.oldest_age_seconds ?? 0)) };
}

export interface RelayMetricsDeps {
  /** The outbox's database: the backlog gauges are registered only where it is given (the relay process). */
  db?: Queryable;
  /** Told when the backlog query fails; the two gauges then read NaN for that scrape. */
  logger?: Logger;
  /** The pipeline's dead-letter counter, which the relay shares with the loader. */
  recordDeadLetter(topic: string, stage: 'relay.encode'): void;
}

/** The backlog gauges, read by one query per scrape. */
function registerBacklog(registry: Registry, db: Queryable, logger: Logger | undefined) {
  // One query per scrape feeds both gauges: prom-client collects the metrics of a scrape
  // concurrently, so the second collect() joins the query the first one started.
  let backlogRead: Promise<RelayBacklog | undefined> | undefined;
  const readBacklog = () =>
    (backlogRead ??= readRelayBacklog(db)
      .catch((error: unknown) => {
        logger?.warn({ err: error }, 'relay backlog could not be read for the metrics');
        return undefined;
      })
      .finally(() => {
        backlogRead = undefined;
      }));
  new Gauge({
    name: RELAY_METRIC_NAMES.backlogAge,
    help: 'Age in seconds of the oldest outbox event not yet relayed (0 when none waits; NaN when the outbox could not be read).',
    registers: [registry],
    async collect() {
      this.set((await readBacklog())?.oldestAgeSeconds ?? NaN);
    },
  });
  new Gauge({
    name: RELAY_METRIC_NAMES.backlogEvents,
    help: 'Outbox events not yet relayed (NaN when the outbox could not be read).',
    registers: [registry],
    async collect() {
      this.set((await readBacklog())?.events ?? NaN);
    },
  });
  return readBacklog;
}

export function relayMetrics(registry: Registry, deps: RelayMetricsDeps) {
  const relayed = new Counter({
    name: RELAY_METRIC_NAMES.relayed,
    help: 'Outbox events published to the event log, per topic.',
    labelNames: ['topic'] as const,
    registers: [registry],
  });
  /** The backlog (undefined when it could not be read); absent without the outbox's database. */
  const readBacklog = deps.db ? registerBacklog(registry, deps.db, deps.logger) : undefined;

  function recordRelayed(topic: string, count = 1) {
    if (count > 0) relayed.inc({ topic }, count);
  }

  /**
   * The relay's event log, counting what each publish delivered (after it resolved): messages per
   * topic, and the relay's dead letters (messages to deadLetterTopic) by the topic their event
   * type routes to (topicOf; 'unknown' when the type has no route, a usual reason to fail encoding).
   */
  function instrumentEventLog(log: EventLog, options: { deadLetterTopic: string; topicOf?: (eventType: string) => string }): EventLog {
    const sourceTopic = (m: LogMessage): string => {
      try {
        const eventType = (JSON.parse(m.value.toString('utf8')) as { row?: { event_type?: unknown } }).row?.event_type;
        return typeof eventType === 'string' && options.topicOf ? options.topicOf(eventType) : 'unknown';
      } catch {
        return 'unknown';
      }
    };
    return {
      async publish(messages) {
        await log.publish(messages);
        const perTopic = new Map<string, number>();
        for (const m of messages) {
          if (m.topic === options.deadLetterTopic) deps.recordDeadLetter(sourceTopic(m), 'relay.encode');
          else perTopic.set(m.topic, (perTopic.get(m.topic) ?? 0) + 1);
        }
        for (const [topic, n] of perTopic) recordRelayed(topic, n);
      },
      close: () => log.close(),
    };
  }

  return { relayed, readBacklog, recordRelayed, instrumentEventLog };
}
