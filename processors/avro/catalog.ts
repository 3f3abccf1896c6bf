/**
 * The checked-in event catalog (schemas/avro/catalog.json): for every event type its topic, its
 * current schema (`<event>.avsc`, the reader schema) and every released version
 * (`history/<event>.v<N>.avsc`) with the schema id the Confluent wire header carries and the
 * schema's CRC-64-AVRO (Rabin) fingerprint. Loading checks the catalog whole; see catalogProblems.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import avro from 'avsc';

export const DEFAULT_AVRO_DIR = fileURLToPath(new URL('../../schemas/avro/', import.meta.url));

export interface CatalogVersion {
  version: number;
  /** Schema id in the Confluent header: unique across the catalog, fixed once released. */
  id: number;
  /** Path relative to the catalog directory. */
  file: string;
  /** CRC-64-AVRO of the Parsing Canonical Form, as 16 hex digits of the unsigned 64-bit number. */
  rabin: string;
}

export interface CatalogEvent {
  topic: string;
  /** The current (reader) schema, relative to the catalog directory. */
  schema: string;
  versions: CatalogVersion[];
}

export interface CatalogFile {
  wire_format: 'confluent';
  /** The id the next released version takes; greater than every id in use. */
  next_id: number;
  events: Record<string, CatalogEvent>;
}

export interface LoadedVersion extends CatalogVersion {
  eventType: string;
  /** The writer schema of messages carrying this id. */
  type: avro.Type;
}

export interface LoadedEvent {
  eventType: string;
  topic: string;
  /** Registry subject under TopicRecordNameStrategy: `<topic>-<record full name>`. */
  subject: string;
  /** The current schema's JSON, the reader schema for every version. */
  schemaJson: Record<string, unknown>;
  type: avro.Type;
  /** The latest released version: what encoding writes. */
  current: LoadedVersion;
  versions: LoadedVersion[];
}

export interface LoadedCatalog {
  dir: string;
  events: Map<string, LoadedEvent>;
  byId: Map<number, LoadedVersion>;
}

/** How every schema of the contract is parsed: unions of null and one type stay plain values, records carry no methods. */
export const parseSchema = (schema: unknown): avro.Type =>
  avro.Type.forSchema(schema as avro.Schema, { wrapUnions: 'never', omitRecordMethods: true });

// CRC-64-AVRO, exactly as the Avro specification's "Schema Fingerprints" section gives it.
const EMPTY = 0xc15d213aa4d7a795n;
const MASK = 0xffffffffffffffffn;
const RABIN_TABLE = Array.from({ length: 256 }, (_, i) => {
  let fp = BigInt(i);
  for (let j = 0; j < 8; j += 1) fp = (fp >> 1n) ^ (EMPTY & -(fp & 1n));
  return fp & MASK;
});

/** The 64-bit Rabin fingerprint of a string (the spec's test vectors: `"int"` is 0x7275d51a3f395c8f). */
export function rabinFingerprint(text: string): bigint {
  let fp = EMPTY;
  for (const byte of Buffer.from(text, 'utf8')) fp = (fp >> 8n) ^ RABIN_TABLE[Number((fp ^ BigInt(byte)) & 0xffn)]!;
  return fp;
}

/** Parsing Canonical Form: avsc's schema() without options is the spec's canonical form. */
const canonicalForm = (type: avro.Type): string => JSON.stringify(type.schema());

export const fingerprintHex = (type: avro.Type): string => rabinFingerprint(canonicalForm(type)).toString(16).padStart(16, '0');

/**
 * The compatibility gate: can a consumer holding `reader` read what `writer` wrote (backward
 * compatibility of `reader` with `writer`)? Answers with avsc's reason, or undefined when it can.
 */
export function incompatibility(reader: avro.Type, writer: avro.Type): string | undefined {
  try {
    reader.createResolver(writer);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

function readJson(dir: string, file: string): unknown {
  return JSON.parse(readFileSync(join(dir, file), 'utf8'));
}

const stripDocs = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(stripDocs);
  if (typeof schema !== 'object' || schema === null) return schema;
  return Object.fromEntries(Object.entries(schema).filter(([k]) => k !== 'doc').map(([k, v]) => [k, stripDocs(v)]));
};

/**
 * Reads and checks a catalog. Problems are collected, not thrown, so a test can list them all:
 * - every version's file parses, and its fingerprint is the one recorded (a released schema is never edited);
 * - schema ids are unique positive 32-bit integers below next_id, versions count up from 1;
 * - the current schema is the latest released version, docs aside (a change needs a new version and id);
 * - the current schema reads every released version (backward compatibility, the gate).
 */
export function inspectCatalog(dir: string = DEFAULT_AVRO_DIR): { catalog: LoadedCatalog; problems: string[] } {
  const problems: string[] = [];
  const file = readJson(dir, 'catalog.json') as CatalogFile;
  if (file.wire_format !== 'confluent') problems.push(`catalog.json: wire_format must be "confluent", is ${JSON.stringify(file.wire_format)}`);
  const events = new Map<string, LoadedEvent>();
  const byId = new Map<number, LoadedVersion>();
  for (const [eventType, entry] of Object.entries(file.events ?? {})) {
    const where = `catalog.json: ${eventType}`;
    let schemaJson: Record<string, unknown>;
    let type: avro.Type;
    try {
      schemaJson = readJson(dir, entry.schema) as Record<string, unknown>;
      type = parseSchema(schemaJson);
    } catch (error) {
      problems.push(`${where}: current schema ${entry.schema}: ${(error as Error).message}`);
      continue;
    }
    if (typeof entry.topic !== 'string' || entry.topic === '') problems.push(`${where}: no topic`);
    const versions: LoadedVersion[] = [];
    let lastJson: unknown;
    (entry.versions ?? []).forEach((v, index) => {
      const at = `${where} v${v.version} (${v.file})`;
      if (v.version !== index + 1) problems.push(`${at}: versions must count 1, 2, 3... in order`);
      if (!Number.isInteger(v.id) || v.id < 1 || v.id > 2 ** 31 - 1) problems.push(`${at}: schema id must be a positive 32-bit integer`);
      const taken = byId.get(v.id);
      if (taken) problems.push(`${at}: schema id ${v.id} is already ${taken.eventType} v${taken.version}`);
      let writer: avro.Type;
      try {
        lastJson = readJson(dir, v.file);
        writer = parseSchema(lastJson);
      } catch (error) {
        problems.push(`${at}: ${(error as Error).message}`);
        return;
      }
      const actual = fingerprintHex(writer);
      if (actual !== v.rabin) {
        problems.push(`${at}: fingerprint is ${actual}, catalog says ${v.rabin}: a released schema must not change (release a new version instead)`);
      }
      const reason = incompatibility(type, writer);
      if (reason !== undefined) problems.push(`${at}: the current schema ${entry.schema} cannot read it (not backward compatible): ${reason}`);
      const loaded: LoadedVersion = { ...v, eventType, type: writer };
      versions.push(loaded);
      if (!taken) byId.set(v.id, loaded);
    });
    const current = versions.at(-1);
    if (!current) {
      problems.push(`${where}: no released version`);
      continue;
    }
    if (!isDeepStrictEqual(stripDocs(schemaJson), stripDocs(lastJson))) {
      problems.push(
        `${where}: ${entry.schema} differs from its latest released version ${current.file}: copy it to ` +
          `history/${eventType}.v${current.version + 1}.avsc and add that version with a new schema id to catalog.json`,
      );
    }
    const fullName = type.name ?? eventType;
    events.set(eventType, { eventType, topic: entry.topic, subject: `${entry.topic}-${fullName}`, schemaJson, type, current, versions });
  }
  const highest = Math.max(0, ...byId.keys());
  if (!Number.isInteger(file.next_id) || file.next_id <= highest) problems.push(`catalog.json: next_id must be greater than ${highest}, the highest id in use`);
  return { catalog: { dir, events, byId }, problems };
}

/** The catalog, or an error listing every problem with it. */
export function loadCatalog(dir: string = DEFAULT_AVRO_DIR): LoadedCatalog {
  const { catalog, problems } = inspectCatalog(dir);
  if (problems.length > 0) throw new Error(`Avro catalog ${dir} is not valid:\n- ${problems.join('\n- ')}`);
  return catalog;
}
