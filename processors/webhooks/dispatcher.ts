/**
 * The webhook dispatcher (issue 32, point 3): a stream processor of the event log. Each batch of
 * messages is decoded, turned into webhook events by the mapping of schemas/webhooks.ts, and written
 * as delivery rows (one per endpoint and event, idempotent) before the batch is acknowledged: the
 * Kafka offset is committed (kafka-dispatcher.ts), or, embedded, the relay marks the outbox rows
 * (webhookEventLog below). It never sends: the delivery worker does (worker.ts), so a slow receiver
 * never holds the log.
 */
import type { Queryable } from '../../core/db.js';
import type { DecodedEvent, EventType } from '../../schemas/event-contract.js';
import { MAPPED_EVENT_TYPES, webhookEventsOf } from '../../schemas/webhooks.js';
import type { AvroCodec } from '../avro/codec.js';
import type { EventLog, LogMessage } from '../event-log/event-log.js';
import { enqueue, type QueuedEvent } from './queue.js';

export interface DispatchResult {
  /** Webhook events the batch carried. */
  events: number;
  /** Deliveries created (an event no enabled endpoint asks for creates none). */
  deliveries: number;
  /** Messages that could not be decoded: skipped here (the loader dead-letters them). */
  unreadable: number;
}

export interface Dispatcher {
  /** The catalog topics that carry a mapped event type: the only ones the dispatcher reads. */
  readonly topics: readonly string[];
  /** Writes the batch's deliveries; resolves once they are committed. publishedAt: each message's time in the log, when known. */
  dispatch(values: readonly Buffer[], publishedAt?: readonly (Date | undefined)[]): Promise<DispatchResult>;
}

export interface DispatcherDeps {
  db: Queryable;
  codec: Pick<AvroCodec, 'decode' | 'route'>;
  /** Told after deliveries were created (the worker claims at once instead of at its next poll). */
  onEnqueued?(count: number): void;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const topics = [...new Set(MAPPED_EVENT_TYPES.map((t) => deps.codec.route(t).topic))].sort();
  return {
    topics,
    async dispatch(values, publishedAt = []) {
      const events: QueuedEvent[] = [];
      let unreadable = 0;
      for (const [i, value] of values.entries()) {
        let decoded: DecodedEvent;
        try {
          decoded = deps.codec.decode(value);
        } catch {
          unreadable += 1;
          continue;
        }
        const { event_id, program_id, occurred_at, test, payload } = decoded.value;
        // One internal event may make several webhook events (payout.paid: one commission.paid per commission).
        const mapped = webhookEventsOf(decoded.eventType as EventType, {
          eventId: event_id,
          programId: Number(program_id),
          occurredAt: occurred_at,
          test,
          payload: payload as never,
        });
        for (const m of mapped) events.push({ eventId: m.id, programId: Number(program_id), type: m.type, body: m.body, publishedAt: publishedAt[i] });
      }
      const deliveries = await enqueue(deps.db, events);
      if (deliveries) deps.onEnqueued?.(deliveries);
      return { events: events.length, deliveries, unreadable };
    },
  };
}

/**
 * The embedded mode's side of the log for the dispatcher: publishing a batch writes its deliveries,
 * so the relay marks the outbox rows only once they are committed (a crash before that publishes
 * them again, and the deliveries are not made twice).
 */
export function webhookEventLog(dispatcher: Dispatcher): EventLog {
  const topics = new Set(dispatcher.topics);
  return {
    async publish(messages) {
      const values = messages.filter((m) => topics.has(m.topic)).map((m) => m.value);
      if (values.length) await dispatcher.dispatch(values);
    },
    async close() {},
  };
}

/** One log that publishes to several: the batch is accepted once every one of them accepted it. */
export function fanOutLog(logs: readonly EventLog[]): EventLog {
  return {
    async publish(messages: LogMessage[]) {
      await Promise.all(logs.map((log) => log.publish(messages)));
    },
    async close() {
      for (const log of logs) await log.close();
    },
  };
}
