import type { Logger } from 'pino';
import type { Database } from '../core/db.js';
import { openWarehouse, type Warehouse, type WarehouseConfig } from '../core/warehouse.js';
import { migrateWarehouse } from '../core/warehouse-migrate.js';
import { createAvroCodec } from './avro/codec.js';
import { createLoader } from './loader.js';
import { createLoadingLog } from './loading-log.js';
import { createRelay } from './relay.js';

export const DEAD_LETTER_TOPIC = 'tracking.dead-letter.v1';

export interface EmbeddedPipeline {
  warehouse: Warehouse;
  /** Finishes the batch in flight, then closes the warehouse. */
  stop(): Promise<void>;
}

/**
 * Relay and loader inside the ingest process (the embedded default): the outbox is encoded to
 * the same Avro bytes as in the distributed mode and loaded into the warehouse before it is marked.
 */
export async function startEmbeddedPipeline(deps: { db: Database; warehouse: WarehouseConfig; logger: Logger }): Promise<EmbeddedPipeline> {
  const warehouse = await openWarehouse(deps.warehouse);
  const applied = await migrateWarehouse(warehouse);
  if (applied.length) deps.logger.info({ applied }, 'warehouse migrations applied');
  const codec = createAvroCodec();
  const log = createLoadingLog({
    loader: createLoader({ warehouse, decode: codec.decode }),
    deadLetterTopic: DEAD_LETTER_TOPIC,
    reportDeadLetter: (topic, reason, value) =>
      deps.logger.error({ topic, reason, value: value.toString('base64') }, 'event dead-lettered'),
  });
  const relay = createRelay({ db: deps.db, log, encode: codec.message, deadLetterTopic: DEAD_LETTER_TOPIC });
  const loop = relay.start({
    onResult: (result) => {
      if (result.kind === 'retry') deps.logger.error({ err: result.error }, 'relay batch failed; retrying');
      else if (result.kind === 'ok') deps.logger.debug({ relayed: result.relayed }, 'events relayed and loaded');
    },
  });
  return {
    warehouse,
    async stop() {
      await loop.stop();
      await warehouse.close();
    },
  };
}
