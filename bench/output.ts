/** What the benchmarks print: lines on stdout, numbers in en-US form, the machine's load. */
import { loadavg } from 'node:os';

export const log = (line = '') => process.stdout.write(`${line}\n`);

/** Grouped digits with a fixed number of decimals. */
export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** Other work on the machine skews every figure; the load average says whether there was any. */
export const loadText = () => loadavg().map((l) => l.toFixed(2)).join(' ');

/** As fmt, with '-' for a figure that could not be computed (NaN, Infinity). */
export const fmtFinite = (n: number, digits = 0) => (Number.isFinite(n) ? fmt(n, digits) : '-');

/** value / base as `0.51x`; '-' when either is missing. */
export const ratio = (value: number | undefined, base: number) => (value === undefined || !Number.isFinite(value) || !(base > 0) ? '-' : `${(value / base).toFixed(2)}x`);
