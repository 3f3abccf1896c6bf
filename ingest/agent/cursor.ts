/**
 * The page cursors of the agent lists (issue 13; issue 27 point 7). Opaque to clients: base64url
 * JSON of [list, time, id], the list's name and its last row's position. A cursor is checked whole
 * here, before any query sees it: the list it came from, its time parsed strictly as that list's
 * store prints it, its id in the shape of that list's ids. Anything else that decodes is the one
 * cursor 400, never a statement that fails with a 500. A list is declared with `listCursor`, so a
 * list added later gets the same checks.
 */
import { z } from 'zod';
import { M } from '../http/messages.js';

/** Where a page ends: the row's time and id, as the list's store prints them. */
export interface Cursor {
  at: string;
  id: string;
}

/** How a list's store prints a row's time: Postgres' timestamptz text (with its offset), or the warehouse's UTC DateTime64(6). */
export type TimeText = 'postgres' | 'warehouse';
/** A list's row ids, as text. */
export type IdShape = 'uuid' | 'bigint' | 'text';

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?/;
// Postgres prints the session zone's offset: hours, then minutes and seconds when not zero.
const OFFSET = /^[+-](\d{2})(?::(\d{2})(?::(\d{2}))?)?$/;
/** Years each store reads: Postgres' four-digit years (no BC), the warehouse's DateTime64 range. */
const YEARS: Record<TimeText, [number, number]> = { postgres: [1, 9999], warehouse: [1900, 2299] };

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysIn = (y: number, m: number) => (m === 2 ? (isLeap(y) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31);

/** A calendar date and a time of day that exist (no month 13, February 30, 24:00 or leap second), in the store's years. */
function isTime(kind: TimeText, value: string): boolean {
  const m = DATE_TIME.exec(value);
  if (!m) return false;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const [first, last] = YEARS[kind];
  if (y < first || y > last || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59) return false;
  const rest = value.slice(m[0].length);
  if (kind === 'warehouse') return rest === '';
  const offset = OFFSET.exec(rest);
  return offset !== null && Number(offset[1]) <= 15 && Number(offset[2] ?? 0) <= 59 && Number(offset[3] ?? 0) <= 59;
}

const MAX_BIGINT = 9_223_372_036_854_775_807n;
const ID: Record<IdShape, (value: string) => boolean> = {
  // As Postgres prints a uuid: lower case, hyphenated.
  uuid: (v) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(v),
  // A bigserial id: positive, no leading zero, within bigint.
  bigint: (v) => /^[1-9][0-9]{0,18}$/.test(v) && BigInt(v) <= MAX_BIGINT,
  // A text id (clicks): printable ASCII without spaces, as the service's ids are.
  text: (v) => /^[\x21-\x7e]{1,255}$/.test(v),
};

export interface ListCursor {
  /** The query parameter: the decoded, checked position, or the cursor 400. */
  schema: z.ZodType<Cursor | undefined, string | undefined>;
  encode(position: Cursor): string;
}

/** The cursor of one list: its name, and the time and id its rows are positioned by. */
export function listCursor(list: string, time: TimeText, id: IdShape): ListCursor {
  const message = M.agent.cursor;
  const position = z.tuple([z.literal(list), z.string().refine((v) => isTime(time, v)), z.string().refine(ID[id])]);
  const schema = z
    .string({ error: message })
    .max(1024, message)
    .regex(/^[A-Za-z0-9_-]+$/, message)
    .transform((value, ctx) => {
      let decoded: unknown;
      try {
        decoded = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
      } catch {
        decoded = undefined;
      }
      const parsed = position.safeParse(decoded);
      if (!parsed.success) {
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      }
      return { at: parsed.data[1], id: parsed.data[2] };
    })
    .optional()
    .describe('next_cursor of the previous page; omit for the first page');
  return { schema, encode: (p) => Buffer.from(JSON.stringify([list, p.at, p.id]), 'utf8').toString('base64url') };
}
