/**
 * The daily-rates CSV, in the layout of the ECB's published history (eurofxref-hist.csv): a header
 * `Date,USD,JPY,...` (a trailing comma, as the ECB writes it, is allowed), then one row per day,
 * `2026-11-26,1.0512,163.27,...`: how many units of each column's currency buy one euro that day,
 * `N/A` (or an empty cell) where none was published. Any current ISO 4217 currency may be a
 * column (VND is not in the ECB's list; a file may add it). Pure: the import (rates.ts) writes.
 * docs/decisions/currencies.md, "The rates file".
 */
import { FX_BASE, isKnownCurrency } from './currencies.js';

export interface ParsedRate {
  /** The file's line (1-based; the header is line 1): errors against stored rates name it. */
  line: number;
  currency: string;
  /** YYYY-MM-DD */
  day: string;
  /** Decimal text as written (up to 14 digits before the point and 10 after). */
  perEur: string;
}

export interface CsvProblem {
  line: number;
  message: string;
}

export type ParsedRates = { ok: true; rates: ParsedRate[] } | { ok: false; problems: CsvProblem[] };

/** Past this many, the rest of a bad file is not read: the first ones say what is wrong. */
const MAX_PROBLEMS = 20;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const RATE = /^\d{1,14}(\.\d{1,10})?$/;
const MISSING = new Set(['', 'N/A']);
/** The ECB's series starts in 1999; nothing before is a euro rate. */
const FIRST_DAY = '1999-01-01';

const validDay = (text: string): boolean => {
  const m = DAY.exec(text);
  if (!m) return false;
  const date = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return date.toISOString().slice(0, 10) === text;
};

/**
 * The rates of a file, or every problem found (up to 20), each with its line. `today` (YYYY-MM-DD,
 * UTC) bounds the days: a rate is published for a day that has come.
 */
export function parseRatesCsv(text: string, today: string): ParsedRates {
  const problems: CsvProblem[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const header = (lines[0] ?? '').split(',').map((cell) => cell.trim());
  if (header[0]?.toLowerCase() !== 'date') {
    return { ok: false, problems: [{ line: 1, message: 'the header must start with Date, then one ISO 4217 currency code per column (Date,USD,JPY,...)' }] };
  }
  // Empty header cells are allowed (the ECB ends every line with a comma): their cells must stay empty.
  const columns = header.slice(1);
  const seen = new Set<string>();
  columns.forEach((code, i) => {
    if (code === '') return;
    if (code === FX_BASE) problems.push({ line: 1, message: `column ${i + 2}: EUR is the base of the rates (1 EUR = the rate in each currency); remove its column` });
    else if (!isKnownCurrency(code)) problems.push({ line: 1, message: `column ${i + 2}: ${JSON.stringify(code.slice(0, 20))} is not an ISO 4217 currency code` });
    else if (seen.has(code)) problems.push({ line: 1, message: `column ${i + 2}: ${code} appears twice` });
    seen.add(code);
  });
  if (seen.size === 0 && problems.length === 0) problems.push({ line: 1, message: 'the header names no currency (Date,USD,JPY,...)' });
  if (problems.length > 0) return { ok: false, problems };

  const rates: ParsedRate[] = [];
  const byKey = new Map<string, ParsedRate>();
  for (let i = 1; i < lines.length && problems.length < MAX_PROBLEMS; i++) {
    const line = i + 1;
    const raw = lines[i]!;
    if (raw.trim() === '') continue;
    const cells = raw.split(',').map((cell) => cell.trim());
    if (cells.length !== header.length) {
      problems.push({ line, message: `${cells.length} cells where the header has ${header.length}` });
      continue;
    }
    const day = cells[0]!;
    if (!validDay(day)) {
      problems.push({ line, message: `${JSON.stringify(day.slice(0, 20))} is not a date (YYYY-MM-DD)` });
      continue;
    }
    if (day < FIRST_DAY || day > today) {
      problems.push({ line, message: `${day} is outside ${FIRST_DAY} to today (${today})` });
      continue;
    }
    columns.forEach((currency, c) => {
      const value = cells[c + 1]!;
      if (MISSING.has(value)) return;
      if (currency === '') {
        problems.push({ line, message: `column ${c + 2} has no currency in the header but holds ${JSON.stringify(value.slice(0, 20))}` });
        return;
      }
      if (!RATE.test(value) || !/[1-9]/.test(value)) {
        problems.push({
          line,
          message: `${currency} on ${day}: ${JSON.stringify(value.slice(0, 30))} is not a positive rate (a decimal above 0, up to 10 decimals, or N/A)`,
        });
        return;
      }
      const rate: ParsedRate = { line, currency, day, perEur: value };
      const key = `${currency} ${day}`;
      const earlier = byKey.get(key);
      if (!earlier) {
        byKey.set(key, rate);
        rates.push(rate);
      } else if (!sameDecimal(earlier.perEur, value)) {
        problems.push({ line, message: `${currency} on ${day}: ${value} contradicts ${earlier.perEur} on line ${earlier.line}` });
      }
    });
  }
  return problems.length > 0 ? { ok: false, problems: problems.slice(0, MAX_PROBLEMS) } : { ok: true, rates };
}

/** Equal as numbers: 1.05 and 1.0500 are the same rate. */
export function sameDecimal(a: string, b: string): boolean {
  return canonicalDecimal(a) === canonicalDecimal(b);
}

/** 001.0500 -> 1.05, 2.000 -> 2: the form stored rates are compared and shown in. */
export function canonicalDecimal(text: string): string {
  const [whole = '0', fraction = ''] = text.split('.');
  const w = whole.replace(/^0+(?=\d)/, '');
  const f = fraction.replace(/0+$/, '');
  return f === '' ? w : `${w}.${f}`;
}
