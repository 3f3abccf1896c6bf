/**
 * Reading one field of a decoded event for its warehouse column: a value that does not fit the
 * column throws a MappingError naming the field, which makes the message a dead letter.
 */

/** A warehouse row, or a record of a decoded event: column or field names to values. */
export type Row = Record<string, unknown>;

export class MappingError extends Error {}

export const fail = (field: string, expected: string, value: unknown): never => {
  throw new MappingError(`${field}: expected ${expected}, got ${JSON.stringify(value) ?? String(value)}`);
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]00(?::?00)?)?$/;
const CODEC_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/*
 * Readers take the field's name from the record's type, so a mapper can read only its payload's
 * fields (schemas/event-contract.ts): `NoInfer` keeps a misspelt name from widening the type.
 */
export type Fields<F extends string> = { readonly [K in F]?: unknown };

export function str<F extends string>(o: Fields<F>, field: NoInfer<F>): string {
  const v = o[field];
  return typeof v === 'string' ? v : fail(field, 'a string', v);
}
export function uuid<F extends string>(o: Fields<F>, field: NoInfer<F>): string {
  const v = str(o, field);
  return UUID.test(v) ? v.toLowerCase() : fail(field, 'a UUID', v);
}
export function int<F extends string>(o: Fields<F>, field: NoInfer<F>): number {
  const v = typeof o[field] === 'string' && /^-?\d+$/.test(o[field] as string) ? Number(o[field]) : o[field];
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : fail(field, 'an integer', o[field]);
}
export function bool<F extends string>(o: Fields<F>, field: NoInfer<F>): boolean {
  const v = o[field];
  return typeof v === 'boolean' ? v : fail(field, 'a boolean', v);
}
/** 'YYYY-MM-DD hh:mm:ss.ffffff' in UTC: what DateTime64(6, 'UTC') reads on any server, microseconds kept. */
export function time<F extends string>(o: Fields<F>, field: NoInfer<F>): string {
  const v = o[field];
  if (v instanceof Date) {
    if (Number.isNaN(v.getTime())) fail(field, 'a timestamp', v);
    return v.toISOString().replace('T', ' ').replace('Z', '000');
  }
  if (typeof v !== 'string') return fail(field, 'a timestamp', v);
  // What the Avro codec decodes to (`2025-03-01T12:00:00.123456Z`), without a match array: only speed.
  if (v.length === 27 && CODEC_TIME.test(v)) return `${v.slice(0, 10)} ${v.slice(11, 26)}`;
  const m = ISO.exec(v);
  // Without a zone the time is UTC (what Postgres and the Avro codec write is UTC anyway).
  if (m) {
    return `${m[1]} ${m[2]}.${(m[3] ?? '').padEnd(6, '0').slice(0, 6)}`;
  }
  // Another offset: exact to the millisecond through Date.
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? fail(field, 'a timestamp', v) : time({ [field]: d }, field);
}
const nullable =
  <T>(read: (o: Row, field: string) => T) =>
  <F extends string>(o: Fields<F>, field: NoInfer<F>): T | null =>
    o[field] === null || o[field] === undefined ? null : read(o, field);
export const intOrNull = nullable(int);
export const strOrNull = nullable(str);
export const timeOrNull = nullable(time);

/** The UTC hour of a time as time() writes it: `YYYY-MM-DD hh:00:00`. */
export const hourOf = (t: string) => `${t.slice(0, 13)}:00:00`;
export const uuidOrNull = nullable(uuid);

/**
 * An array field as the warehouse's text form of an Array column (`['a','b']`, `[1,2]`): what a
 * TabSeparated cell of Array(UUID) or Array(Int64) reads. Items are checked as uuid() and int() do.
 */
export function uuidList<F extends string>(o: Fields<F>, field: NoInfer<F>): string {
  const v = o[field];
  if (!Array.isArray(v)) return fail(field, 'an array', v);
  return `[${v.map((item, i) => `'${uuid({ [`${field}[${i}]`]: item }, `${field}[${i}]`)}'`).join(',')}]`;
}
export function intList<F extends string>(o: Fields<F>, field: NoInfer<F>): string {
  const v = o[field];
  if (!Array.isArray(v)) return fail(field, 'an array', v);
  return `[${v.map((item, i) => int({ [`${field}[${i}]`]: item }, `${field}[${i}]`)).join(',')}]`;
}
