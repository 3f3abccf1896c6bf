// Numbers, money and times as the page shows them, in the browser's locale.
import { state } from './state.js';

const countFormat = new Intl.NumberFormat();
export const percentFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
export const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

const moneyFormats = new Map();
function moneyFormat(currency, compact) {
  const key = `${currency}:${compact}`;
  if (!moneyFormats.has(key)) {
    const options = compact ? { notation: 'compact', maximumFractionDigits: 1 } : {};
    let format;
    try {
      format = new Intl.NumberFormat(undefined, { style: 'currency', currency, ...options });
    } catch {
      format = new Intl.NumberFormat(undefined, { minimumFractionDigits: compact ? 0 : 2, maximumFractionDigits: 2, ...options });
    }
    moneyFormats.set(key, format);
  }
  return moneyFormats.get(key);
}

export const formatCount = (v) => countFormat.format(v);
/** Dollar figures are in the currency the performance answer names (meta.currency). */
export const formatMoney = (v, { compact = false, currency = state.currency } = {}) => moneyFormat(currency, compact && Math.abs(v) >= 1000).format(v);
