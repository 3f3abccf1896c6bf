/**
 * Avro encoding of outbox events in the Confluent wire format:
 *
 *   byte 0     magic 0x00
 *   bytes 1-4  schema id, big-endian (from schemas/avro/catalog.json; a registry can import them as is)
 *   bytes 5-   Avro binary of the event under that schema
 *
 * encode() writes with the latest released version of the event's schema; decode() reads the id,
 * finds the writer schema (any released version) and resolves it to the current reader schema, so
 * old messages stay readable after a compatible schema change.
 */
import { join } from 'node:path';
import type avro from 'avsc';
import type { DecodedEvent, EventType, EventValue, OutboxRow } from '../../schemas/event-contract.js';
import type { LogMessage } from '../event-log/event-log.js';
import { DEFAULT_AVRO_DIR, loadCatalog, type LoadedCatalog, type LoadedVersion } from './catalog.js';
import { compileConverter, contractError, type Converter } from './convert.js';

export { AvroContractError } from './convert.js';

const MAGIC_BYTE = 0;
const HEADER_BYTES = 5;

/**
 * What encode() takes: an event's envelope and payload (an outbox row has them), with the row's type
 * when it has one (checked), the time as text (microseconds) or a Date (milliseconds).
 */
export type EncodableRow = Omit<EventValue, 'occurred_at'> & { event_type?: string; occurred_at: string | Date };

export interface EventRoute {
  topic: string;
  /** Registry subject (TopicRecordNameStrategy). */
  subject: string;
  schemaId: number;
  version: number;
}

export interface AvroCodec {
  readonly eventTypes: readonly string[];
  /** Where an event type goes; the Kafka key is the row's aggregate_key. */
  route(eventType: EventType): EventRoute;
  /** Header and Avro body; throws AvroContractError naming the field when the row does not fit. */
  encode(eventType: EventType, row: EncodableRow): Buffer;
  decode(message: Buffer): DecodedEvent;
  /** The relay's message for a row: its event type's topic, the aggregate key, the encoded event. */
  message(row: OutboxRow): LogMessage;
  /** The current (reader) avsc type of an event type, for benchmarks and tools. */
  avroType(eventType: EventType): avro.Type;
}

export interface AvroCodecOptions {
  /** Directory holding catalog.json; schemas/avro by default. */
  dir?: string;
  /** An already loaded catalog (wins over dir). */
  catalog?: LoadedCatalog;
}

interface Reader {
  version: LoadedVersion;
  eventType: EventType;
  reader: avro.Type;
  /** Undefined when the writer is the current schema: nothing to resolve. */
  resolver: ReturnType<avro.Type['createResolver']> | undefined;
  converter: Converter;
}

interface Writer {
  route: EventRoute;
  type: avro.Type;
  converter: Converter;
}

/** A codec over one catalog. Loading checks the whole catalog and throws on any problem. */
export function createAvroCodec(options: AvroCodecOptions = {}): AvroCodec {
  const catalog = options.catalog ?? loadCatalog(options.dir ?? DEFAULT_AVRO_DIR);
  const writers = new Map<string, Writer>();
  const readers = new Map<number, Reader>();
  for (const event of catalog.events.values()) {
    const converter = compileConverter(event.schemaJson, event.eventType, '', true);
    writers.set(event.eventType, {
      route: { topic: event.topic, subject: event.subject, schemaId: event.current.id, version: event.current.version },
      type: event.type,
      converter,
    });
    for (const version of event.versions) {
      readers.set(version.id, {
        version,
        eventType: event.eventType as EventType,
        reader: event.type,
        resolver: version === event.current ? undefined : event.type.createResolver(version.type),
        converter,
      });
    }
  }

  // Messages are written here, then copied out at their exact size: one allocation per message.
  let scratch = Buffer.allocUnsafe(4096);

  const writerFor = (eventType: string): Writer => {
    const writer = writers.get(eventType);
    if (!writer) throw new Error(`No Avro schema for event type ${JSON.stringify(eventType)} in ${join(catalog.dir, 'catalog.json')}`);
    return writer;
  };

  function encode(eventType: EventType, row: EncodableRow): Buffer {
    const writer = writerFor(eventType);
    if (row.event_type !== undefined && row.event_type !== eventType) {
      throw new Error(`Outbox row ${row.event_id} is a ${row.event_type} event, not ${eventType}`);
    }
    let value: unknown;
    try {
      value = writer.converter.toAvro(row);
    } catch (error) {
      throw contractError(eventType, error);
    }
    let end = writer.type.encode(value, scratch, HEADER_BYTES);
    if (end < 0) {
      // avsc answers with the shortfall when the buffer is too small.
      scratch = Buffer.allocUnsafe(2 * (scratch.length - end));
      end = writer.type.encode(value, scratch, HEADER_BYTES);
    }
    scratch[0] = MAGIC_BYTE;
    scratch.writeUInt32BE(writer.route.schemaId, 1);
    return Buffer.from(scratch.subarray(0, end));
  }

  function decode(message: Buffer): DecodedEvent {
    if (message.length < HEADER_BYTES) {
      throw new Error(`Not an Avro event: ${message.length} bytes, shorter than the ${HEADER_BYTES}-byte Confluent header`);
    }
    if (message[0] !== MAGIC_BYTE) {
      throw new Error(`Not an Avro event in the Confluent wire format: magic byte 0x${message[0]!.toString(16).padStart(2, '0')}, expected 0x00`);
    }
    const schemaId = message.readUInt32BE(1);
    const reader = readers.get(schemaId);
    if (!reader) throw new Error(`Unknown Avro schema id ${schemaId} in the message header: not in ${join(catalog.dir, 'catalog.json')}`);
    let raw: unknown;
    try {
      raw = reader.reader.fromBuffer(message.subarray(HEADER_BYTES), reader.resolver);
    } catch (error) {
      throw new Error(`Avro body of a ${reader.eventType} event (schema id ${schemaId}) does not decode: ${(error as Error).message}`);
    }
    return {
      eventType: reader.eventType,
      schemaId,
      version: reader.version.version,
      value: (reader.converter.fromAvro ? reader.converter.fromAvro(raw) : raw) as EventValue,
    };
  }

  // Plain functions, no `this`: `createRelay({ encode: codec.message })` works unbound.
  return {
    eventTypes: [...writers.keys()],
    route: (eventType) => ({ ...writerFor(eventType).route }),
    avroType: (eventType) => writerFor(eventType).type,
    encode,
    decode,
    message: (row) => ({ topic: writerFor(row.event_type).route.topic, key: row.aggregate_key, value: encode(row.event_type as EventType, row) }),
  };
}
