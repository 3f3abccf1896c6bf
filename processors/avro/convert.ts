/**
 * Strict conversion between the JSON shape of an outbox payload (what jsonb holds: timestamps as
 * ISO-8601 strings, ids and amounts as numbers) and the Avro value avsc writes, compiled once per
 * schema from its JSON definition. Only the subset of Avro the event contract uses is supported;
 * anything else is refused when the schema is loaded, not when a message is encoded.
 */

/** A value that does not fit its schema. `path` names the field, e.g. `payload.created_at`. */
export class AvroContractError extends Error {
  constructor(
    readonly eventType: string,
    readonly path: string,
    problem: string,
  ) {
    super(`${eventType}: ${path}: ${problem}`);
    this.name = 'AvroContractError';
  }
}

/** Thrown by the converters; the codec adds the event type. */
class FieldError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

export interface Converter {
  /** JSON-shaped value to the value avsc encodes; throws a FieldError naming the field. */
  toAvro(value: unknown): unknown;
  /**
   * What avsc decoded back to the JSON shape (timestamps as ISO strings with microseconds),
   * converting records in place; absent when the decoded value is already that shape.
   */
  fromAvro?: (value: unknown) => unknown;
}

/** The one enum symbol readers fall back to; a writer never sends it. */
const READER_DEFAULT_SYMBOL = 'unknown';

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}...` : value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a Date';
  return `a${typeof value === 'object' ? 'n object' : ` ${typeof value}`}`;
}

const fail = (path: string, problem: string): never => {
  throw new FieldError(path, problem);
};

// Timestamps ------------------------------------------------------------------------------------

// Hand-written rather than a regular expression and Date arithmetic: it runs for every timestamp
// of every event the relay publishes. Accepted: what jsonb and JSON.stringify(Date) produce and
// Postgres' text output, i.e. `2025-03-01T12:00:00.123456+00:00`, `2025-03-01T12:00:00.123Z`,
// `2025-03-01 12:00:00.123456+00`; the offset is required, ±HH, ±HH:MM or ±HHMM.

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

// No closures in here: tsx (esbuild keepNames) wraps every function it creates in a naming call.
function digitAt(text: string, i: number): number {
  const d = text.charCodeAt(i) - 48;
  return d >= 0 && d <= 9 ? d : Number.NaN;
}
const twoAt = (text: string, i: number) => digitAt(text, i) * 10 + digitAt(text, i + 1);

/** Microseconds since the epoch of an ISO-8601 instant with an explicit offset; undefined when it is not one. */
export function parseTimestampMicros(text: string): number | undefined {
  const n = text.length;
  if (n < 20 || n > 38) return undefined;
  const sep = text.charCodeAt(10);
  if (text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || (sep !== 84 && sep !== 32) || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) {
    return undefined;
  }
  const year = twoAt(text, 0) * 100 + twoAt(text, 2);
  const month = twoAt(text, 5), day = twoAt(text, 8), hour = twoAt(text, 11), minute = twoAt(text, 14), second = twoAt(text, 17);
  // NaN fails every comparison, so a non-digit anywhere lands here too.
  if (!(month >= 1 && month <= 12 && day >= 1 && hour <= 23 && minute <= 59 && second <= 59 && year >= 0)) return undefined;
  if (day > (month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1]!)) return undefined;
  let i = 19;
  let micros = 0;
  if (text.charCodeAt(i) === 46) {
    i += 1;
    const first = i;
    for (; i < n; i += 1) {
      const d = digitAt(text, i);
      if (Number.isNaN(d)) break;
      if (i - first < 6) micros = micros * 10 + d;
      // Postgres keeps microseconds; a finer fraction would be silently cut.
      else if (d !== 0) return undefined;
    }
    const count = i - first;
    if (count === 0 || count > 9) return undefined;
    for (let k = count; k < 6; k += 1) micros *= 10;
  }
  let offsetMinutes = 0;
  const sign = text.charCodeAt(i);
  if (sign === 90 /* Z */) {
    if (i + 1 !== n) return undefined;
  } else if (sign === 43 || sign === 45) {
    const oh = twoAt(text, i + 1);
    let om = 0;
    const rest = n - (i + 3);
    if (rest === 3 && text.charCodeAt(i + 3) === 58) om = twoAt(text, i + 4);
    else if (rest === 2) om = twoAt(text, i + 3);
    else if (rest !== 0) return undefined;
    if (!(oh <= 23 && om <= 59)) return undefined;
    offsetMinutes = (sign === 45 ? -1 : 1) * (oh * 60 + om);
  } else {
    return undefined;
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60;
  // Past about 285 years either side of 1970, microseconds no longer fit a double exactly.
  const whole = seconds * 1_000_000;
  return Number.isSafeInteger(whole) && Number.isSafeInteger(whole + micros) ? whole + micros : undefined;
}

const pad2 = (v: number) => (v < 10 ? `0${v}` : `${v}`);

/** `2025-03-01T12:00:00.123456Z`: always UTC, always six fractional digits. */
export function formatTimestampMicros(micros: number): string {
  const seconds = Math.floor(micros / 1_000_000);
  const fraction = micros - seconds * 1_000_000;
  const days = Math.floor(seconds / 86_400);
  let rest = seconds - days * 86_400;
  // H. Hinnant's civil_from_days.
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  if (year < 0 || year > 9999) return `${new Date(seconds * 1000).toISOString().slice(0, -5)}.${String(fraction).padStart(6, '0')}Z`;
  const hour = Math.floor(rest / 3600);
  rest -= hour * 3600;
  const minute = Math.floor(rest / 60);
  return `${String(year).padStart(4, '0')}-${pad2(month)}-${pad2(day)}T${pad2(hour)}:${pad2(minute)}:${pad2(rest - minute * 60)}.${String(fraction).padStart(6, '0')}Z`;
}

function timestampMicros(value: unknown, path: string): number {
  if (typeof value === 'string') {
    const micros = parseTimestampMicros(value);
    if (micros === undefined) fail(path, `expected an ISO-8601 timestamp with an offset, got ${describe(value)}`);
    return micros!;
  }
  if (value instanceof Date) {
    const ms = value.getTime();
    if (Number.isNaN(ms)) fail(path, 'expected a timestamp, got an invalid Date');
    return ms * 1000;
  }
  return fail(path, `expected a timestamp (ISO-8601 string or Date), got ${describe(value)}`);
}

// Compilation -----------------------------------------------------------------------------------
// Converters are compiled once per schema; `path` (the field's place, e.g. payload.created_at) is
// known then, so the per-message work is one check per field and no string building. Encoding
// copies a record only when a field of it changes (timestamps, defaults), since avsc reads the
// declared fields and nothing else.

type Schema = string | Schema[] | { [key: string]: unknown };

// V8 runs this regular expression faster than a hand-written loop over the 36 characters.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuid = (v: unknown) => typeof v === 'string' && UUID.test(v);

function primitive(name: string, where: string, path: string): Converter {
  switch (name) {
    case 'null':
      return { toAvro: (v) => (v === null ? null : fail(path, `expected null, got ${describe(v)}`)) };
    case 'boolean':
      return { toAvro: (v) => (typeof v === 'boolean' ? v : fail(path, `expected a boolean, got ${describe(v)}`)) };
    case 'int':
      return {
        toAvro: (v) =>
          Number.isInteger(v) && (v as number) >= INT32_MIN && (v as number) <= INT32_MAX ? v : fail(path, `expected a 32-bit integer, got ${describe(v)}`),
      };
    case 'long':
      return {
        toAvro: (v) => (Number.isSafeInteger(v) ? v : fail(path, `expected an integer (64-bit, within 2^53), got ${describe(v)}`)),
      };
    case 'string':
      return { toAvro: (v) => (typeof v === 'string' ? v : fail(path, `expected a string, got ${describe(v)}`)) };
    default:
      throw new Error(`${where}: unsupported Avro type ${JSON.stringify(name)} in the event contract`);
  }
}

interface CompiledField {
  name: string;
  path: string;
  hasDefault: boolean;
  defaultValue: unknown;
  convert: Converter;
}

function record(schema: { [key: string]: unknown }, where: string, path: string, ignoreExtra: boolean): Converter {
  if (!Array.isArray(schema.fields)) throw new Error(`${where}: record without fields`);
  const fields: CompiledField[] = (schema.fields as { [key: string]: unknown }[]).map((f) => {
    if (typeof f.name !== 'string' || !NAME.test(f.name)) throw new Error(`${where}: bad field name ${JSON.stringify(f.name)}`);
    const at = path ? `${path}.${f.name}` : f.name;
    return { name: f.name, path: at, hasDefault: 'default' in f, defaultValue: f.default, convert: compileConverter(f.type as Schema, `${where}.${f.name}`, at) };
  });
  const known = new Set(fields.map((f) => f.name));
  const converted = fields.flatMap((f) => (f.convert.fromAvro ? [{ name: f.name, fromAvro: f.convert.fromAvro }] : []));
  return {
    toAvro(value) {
      if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Date) {
        return fail(path || 'the event', `expected an object, got ${describe(value)}`);
      }
      const input = value as Record<string, unknown>;
      if (!ignoreExtra) {
        // A field the schema does not know would be dropped without a word: refuse it instead.
        for (const key in input) if (!known.has(key)) fail(path ? `${path}.${key}` : key, 'not in the schema');
      }
      let out: Record<string, unknown> | undefined;
      for (const f of fields) {
        const v = input[f.name];
        if (v !== undefined) {
          const next = f.convert.toAvro(v);
          if (next !== v) (out ??= { ...input })[f.name] = next;
        } else if (f.hasDefault) {
          // Rows written before the field existed: the schema's default stands in, as Avro readers do.
          // A default is written in Avro's JSON encoding, which is already the value avsc takes.
          (out ??= { ...input })[f.name] = structuredClone(f.defaultValue);
        } else {
          fail(f.path, 'missing (required, no default)');
        }
      }
      return out ?? input;
    },
    // avsc builds a fresh record per decode, so it is converted in place rather than copied.
    fromAvro:
      converted.length === 0
        ? undefined
        : (value) => {
            const decoded = value as Record<string, unknown>;
            for (const f of converted) decoded[f.name] = f.fromAvro(decoded[f.name]);
            return decoded;
          },
  };
}

function enumeration(schema: { [key: string]: unknown }, where: string, path: string): Converter {
  const symbols = schema.symbols;
  if (!Array.isArray(symbols) || !symbols.every((s) => typeof s === 'string')) throw new Error(`${where}: enum without symbols`);
  const allowed = new Set<string>(symbols as string[]);
  const reserved = schema.default === READER_DEFAULT_SYMBOL ? READER_DEFAULT_SYMBOL : undefined;
  const list = (symbols as string[]).filter((s) => s !== reserved).join(', ');
  return {
    toAvro: (v) =>
      typeof v === 'string' && allowed.has(v) && v !== reserved ? v : fail(path, `expected one of ${list}, got ${describe(v)}`),
  };
}

/** An array of one item type (the payout events' id lists); an item that does not fit names its index. */
function array(schema: { [key: string]: unknown }, where: string, path: string): Converter {
  if (schema.items === undefined) throw new Error(`${where}: array without items`);
  const item = compileConverter(schema.items as Schema, `${where}[]`, `${path}[]`);
  const fromAvro = item.fromAvro;
  return {
    toAvro(value) {
      if (!Array.isArray(value)) return fail(path, `expected an array, got ${describe(value)}`);
      let out: unknown[] | undefined;
      for (let i = 0; i < value.length; i += 1) {
        const next = item.toAvro(value[i]);
        if (next !== value[i]) (out ??= [...value])[i] = next;
      }
      return out ?? value;
    },
    fromAvro: fromAvro && ((value) => (value as unknown[]).map(fromAvro)),
  };
}

function nullable(branches: Schema[], where: string, path: string): Converter {
  const others = branches.filter((b) => b !== 'null');
  if (branches.length !== 2 || others.length !== 1) {
    throw new Error(`${where}: only unions of null and one other type are supported`);
  }
  const inner = compileConverter(others[0]!, where, path);
  const fromAvro = inner.fromAvro;
  return {
    toAvro: (v) => (v === null ? null : inner.toAvro(v)),
    fromAvro: fromAvro && ((v) => (v === null ? null : fromAvro(v))),
  };
}

/**
 * A converter for one schema. `where` names the schema in load errors; `path` is the value's
 * place in error messages ('' for the event). `ignoreExtra` applies to the top-level record
 * only: an outbox row carries columns (event_type, aggregate_key, txid...) that are not part of
 * the message.
 */
export function compileConverter(schema: Schema, where: string, path = '', ignoreExtra = false): Converter {
  if (typeof schema === 'string') return primitive(schema, where, path);
  if (Array.isArray(schema)) return nullable(schema, where, path);
  const { type, logicalType } = schema;
  if (logicalType === 'timestamp-micros' && type === 'long') {
    return { toAvro: (v) => timestampMicros(v, path), fromAvro: (v) => formatTimestampMicros(v as number) };
  }
  if (logicalType === 'uuid' && type === 'string') {
    return { toAvro: (v) => (isUuid(v) ? v : fail(path, `expected a UUID string, got ${describe(v)}`)) };
  }
  if (logicalType !== undefined) throw new Error(`${where}: unsupported logicalType ${JSON.stringify(logicalType)} on ${JSON.stringify(type)}`);
  if (type === 'record') return record(schema, where, path, ignoreExtra);
  if (type === 'enum') return enumeration(schema, where, path);
  if (type === 'array') return array(schema, where, path);
  if (typeof type === 'string' || Array.isArray(type)) return compileConverter(type as Schema, where, path);
  throw new Error(`${where}: unsupported Avro schema ${JSON.stringify(schema).slice(0, 80)}`);
}

/** A converter's field error as an AvroContractError naming the event type; other errors as they are. */
export function contractError(eventType: string, error: unknown): unknown {
  return error instanceof FieldError ? new AvroContractError(eventType, error.path, error.problem) : error;
}
