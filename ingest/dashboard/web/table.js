/* global document, URL, Blob, setTimeout */
// Tables: rows rendered from data with a label per cell (a narrow screen stacks each row as a
// card, labels from data-label), and a CSV of the same data behind every table's download button.
import { h } from './ui.js';

/** The data each table shows now, by its CSV name: columns and rows (see renderTable). */
const shown = new Map();

/**
 * Renders `rows` into the table's body. columns: [{ label, text(row) → string | Node, csv(row) → value }]
 * (csv null: not in the CSV; absent: the text). The same rows give the CSV of the table's download
 * button (`data-csv` = name), with `options.csvColumns` when the CSV has more columns than the screen.
 */
export function renderTable(table, name, columns, rows, options = {}) {
  const rowAttributes = options.row ?? (() => ({}));
  shown.set(name, { columns: (options.csvColumns ?? columns).filter((c) => c.csv !== null), rows });
  table.tBodies[0].replaceChildren(
    ...rows.map((row) =>
      h(
        'tr',
        rowAttributes(row),
        ...columns.map((c) => {
          const content = c.text(row);
          const cell = h('td', { 'data-label': c.label || null });
          cell.append(content ?? '');
          return cell;
        }),
      ),
    ),
  );
}

/** RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled; a leading = + - @ is defused for spreadsheets. */
function csvField(value) {
  let text = value === null || value === undefined ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text) && !/^-?\d+(\.\d+)?$/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv(columns, rows) {
  const lines = [columns.map((c) => csvField(c.label)).join(',')];
  for (const row of rows) lines.push(columns.map((c) => csvField((c.csv ?? c.text)(row))).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

/** Every `[data-csv]` button downloads its table's rows as shown (all of them, not only a page). */
export function wireCsvButtons(filenamePrefix) {
  document.addEventListener('click', (event) => {
    const button = event.target.closest?.('button[data-csv]');
    if (!button) return;
    const name = button.dataset.csv;
    const data = shown.get(name) ?? { columns: [], rows: [] };
    const url = URL.createObjectURL(new Blob([toCsv(data.columns, data.rows)], { type: 'text/csv;charset=utf-8' }));
    const link = h('a', { href: url, download: `${filenamePrefix()}${name}.csv` });
    document.body.append(link);
    link.click();
    link.remove();
    // Later, not at once: the download reads the blob after the click returns.
    setTimeout(() => URL.revokeObjectURL(url), 30_000);
  });
}

/** The rows a table's CSV holds now (for tests and for the screens' own checks). */
export const csvOf = (name) => {
  const data = shown.get(name);
  return data ? toCsv(data.columns, data.rows) : '';
};
