/**
 * The ISO 4217 currencies a program may report in and rates may be loaded for: the codes of current
 * currencies that ICU (in Node) knows, which follows ISO 4217's list (about 160; funds, metals and
 * the test code XXX are not among them). docs/decisions/currencies.md.
 */
const KNOWN = new Set(Intl.supportedValuesOf('currency'));

/** The base of the stored rates: the ECB publishes how many units of each currency buy one euro. */
export const FX_BASE = 'EUR';

export const DEFAULT_REPORTING_CURRENCY = 'USD';

/** An upper-case three-letter code of a current ISO 4217 currency. */
export const isKnownCurrency = (code: string): boolean => /^[A-Z]{3}$/.test(code) && KNOWN.has(code);
