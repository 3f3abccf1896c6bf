/**
 * `npm run ops -- verify-statement <programId> <YYYY-MM>` (docs/decisions/ledger.md, "Statements"):
 * replays the program's events up to the end of the month from the event log (Kafka when
 * KAFKA_BROKERS is set, else the embedded log, whose durable copy is the outbox) into a scratch
 * store (a fresh in-memory PGlite with the service's schema), computes the month's statement there
 * and compares it with the service's. Prints `match` and the digest, or the first difference.
 */
import type { Logger } from 'pino';
import type { KafkaConfig } from '../core/config.js';
import { openDatabase, type Database } from '../core/db.js';
import { migrate } from '../core/migrate.js';
import { compareStatements, loadStatementEvents, STATEMENT_EVENT_TYPES, type StatementCheck } from '../domain/ledger/replayed-statement.js';
import { periodBounds } from '../domain/ledger/statements.js';
import { createAvroCodec } from '../processors/avro/codec.js';
import { kafkaHistory, outboxHistory } from '../processors/event-history.js';

export interface VerifyDeps {
  db: Database;
  /** Set: the events come from Kafka; else from the outbox. */
  kafka?: KafkaConfig;
  logger: Logger;
}

export interface Verification extends StatementCheck {
  source: 'kafka' | 'outbox';
  events: number;
}

export async function verifyStatement(deps: VerifyDeps, programId: number, period: string): Promise<Verification> {
  const bounds = periodBounds(period);
  if (!bounds) throw new Error(`not a month: ${period} (YYYY-MM)`);
  const codec = createAvroCodec();
  const filter = { programId, before: bounds.to, types: STATEMENT_EVENT_TYPES };
  const events = deps.kafka ? await kafkaHistory(deps.kafka, codec, filter, deps.logger) : await outboxHistory(deps.db, codec, filter);
  const scratch = await openDatabase({ kind: 'pglite', dataDir: undefined });
  try {
    await migrate(scratch);
    const loaded = await loadStatementEvents(scratch, programId, events);
    const check = await compareStatements(deps.db, scratch, programId, period);
    return { ...check, source: deps.kafka ? 'kafka' : 'outbox', events: loaded };
  } finally {
    await scratch.close();
  }
}

/** What the command prints: `match` first, or `mismatch` and where. */
export function verificationLines(v: Verification): string[] {
  const from = `${v.events} events replayed from ${v.source === 'kafka' ? 'Kafka' : 'the embedded event log (outbox)'}`;
  if (v.match) return ['match', `digest ${v.service.digest}`, from];
  return ['mismatch', `first difference (service vs event log): ${v.difference}`, `digest ${v.service.digest} (service) vs ${v.replayed.digest} (event log)`, from];
}
