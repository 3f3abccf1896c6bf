/**
 * Payout exports (partner-program.md, "Payouts": `GET .../payouts/export?status=&format=`): files a
 * brand uploads to its payout provider, one row per payout, each with its partner's payout method.
 * The layouts (docs/decisions/ledger.md, "Exports", with their sources):
 *
 *   csv     ours, with a header: every payout whatever its partner's method.
 *   paypal  PayPal Payouts' bulk file (Payouts web upload): no header; recipient email, amount in
 *           major units, currency, customer id (<= 30 characters, no spaces), note to the recipient,
 *           recipient wallet PAYPAL. One currency per file; partners paid by PayPal only.
 *   wise    Wise's batch template "send by email": header name, recipientEmail, paymentReference,
 *           receiverType, amountCurrency, amount, sourceCurrency, targetCurrency; amountCurrency
 *           `target` (the partner receives the exact amount); partners paid by Wise only.
 */
import { stringify } from 'csv-stringify/sync';
import { sql, type Queryable } from '../../core/db.js';
import { methodOf, type PayoutMethod } from './methods.js';
import type { PayoutStatus } from './payouts.js';

export type ExportFormat = 'csv' | 'paypal' | 'wise';

export interface ExportRow {
  payout_id: string;
  partner_id: number;
  partner_name: string | null;
  partner_email: string | null;
  currency: string;
  amount_minor: number;
  status: PayoutStatus;
  reference: string | null;
  created_at: Date;
  commissions: number;
  method: PayoutMethod | undefined;
}

const q = {
  rows: sql(
    'payouts.export_rows',
    `SELECT p.id AS payout_id, p.partner_id, pa.name AS partner_name, pa.email AS partner_email, p.currency, p.amount_minor, p.status,
            p.reference, p.created_at, cardinality(p.commission_ids) AS commissions, m.method, m.details
       FROM payouts p
       LEFT JOIN partners pa ON pa.id = p.partner_id
       LEFT JOIN partner_payout_methods m ON m.partner_id = p.partner_id
      WHERE p.program_id = $1 AND p.status = $2 AND ($3::text IS NULL OR p.currency = $3)
      ORDER BY p.currency, p.partner_id, p.created_at`,
  ),
};

export async function exportRows(db: Queryable, programId: number, status: PayoutStatus, currency: string | undefined): Promise<ExportRow[]> {
  const rows = await db.many<Omit<ExportRow, 'method'> & { method: string | null; details: Record<string, unknown> | null }>(q.rows, [
    programId, status, currency ?? null,
  ]);
  return rows.map(({ method, details, ...r }) => ({
    ...r,
    partner_id: Number(r.partner_id),
    amount_minor: Number(r.amount_minor),
    commissions: Number(r.commissions),
    method: methodOf({ method, details }),
  }));
}

/** Minor units as the providers read an amount: major units with two decimals (`1234.50`). */
export function majorUnits(minor: number): string {
  const sign = minor < 0 ? '-' : '';
  const abs = Math.abs(minor);
  return `${sign}${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

/** A short, space-free reference of a payout for a provider's reference fields. */
const shortReference = (payoutId: string) => `payout-${payoutId.slice(0, 8)}`;

const recipientOf = (m: PayoutMethod | undefined) => (m && m.method !== 'manual' ? m.email : m?.method === 'manual' ? (m.note ?? '') : '');

/**
 * A text cell a spreadsheet would run as a formula (first character = + - @, tab or CR) gets a leading
 * ' (OWASP, "CSV injection"): partner names and references are typed by people, and brands open
 * this file in a spreadsheet. Numbers, negative ones included, stay as they are. Only our own csv:
 * the providers' files keep their values exactly, as the providers read them.
 */
export const spreadsheetSafe = (text: string): string => (/^[=+\-@\t\r]/.test(text) && !/^-?\d+(\.\d+)?$/.test(text) ? `'${text}` : text);

function plainCsv(rows: ExportRow[]): string {
  return stringify(
    rows.map((r) => [
      r.payout_id, r.partner_id, r.partner_name ?? '', r.partner_email ?? '', r.currency, r.amount_minor, majorUnits(r.amount_minor), r.status,
      r.method?.method ?? '', recipientOf(r.method), r.reference ?? '', r.created_at.toISOString(), r.commissions,
    ]),
    {
      header: true,
      cast: { string: spreadsheetSafe },
      columns: [
        'payout_id', 'partner_id', 'partner_name', 'partner_email', 'currency', 'amount_minor', 'amount', 'status', 'payout_method',
        'payout_recipient', 'reference', 'created_at', 'commissions',
      ],
    },
  );
}

function paypal(rows: ExportRow[]): string {
  return stringify(
    rows.map((r) => [
      (r.method as { email: string }).email, majorUnits(r.amount_minor), r.currency, `partner-${r.partner_id}`, `Affiliate commissions, ${shortReference(r.payout_id)}`,
      'PAYPAL',
    ]),
  );
}

function wise(rows: ExportRow[]): string {
  return stringify(
    rows.map((r) => {
      const m = r.method as Extract<PayoutMethod, { method: 'wise' }>;
      return [m.name, m.email, shortReference(r.payout_id), m.receiver_type, 'target', majorUnits(r.amount_minor), r.currency, r.currency];
    }),
    { header: true, columns: ['name', 'recipientEmail', 'paymentReference', 'receiverType', 'amountCurrency', 'amount', 'sourceCurrency', 'targetCurrency'] },
  );
}

export interface ExportFile {
  body: string;
  /** Payouts in the file, and those left out because their partner is paid another way. */
  included: number;
  omitted: number;
}

/** The file of a format: paypal and wise take the payouts whose partner uses that method. */
export function exportFile(format: ExportFormat, rows: ExportRow[]): ExportFile {
  if (format === 'csv') return { body: plainCsv(rows), included: rows.length, omitted: 0 };
  const mine = rows.filter((r) => r.method?.method === format);
  return { body: format === 'paypal' ? paypal(mine) : wise(mine), included: mine.length, omitted: rows.length - mine.length };
}
