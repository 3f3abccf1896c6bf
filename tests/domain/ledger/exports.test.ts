import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { exportFile, spreadsheetSafe, type ExportRow } from '../../../domain/ledger/exports.js';

const row = (over: Partial<ExportRow>): ExportRow => ({
  payout_id: '0b7e8f8e-6c1a-4c39-9d55-6f3f1c2a9b10',
  partner_id: 7,
  partner_name: 'Ada',
  partner_email: 'ada@partner.example',
  currency: 'USD',
  amount_minor: -1250,
  status: 'pending',
  reference: null,
  created_at: new Date('2026-11-01T00:00:00Z'),
  method: { method: 'paypal', email: 'ada@partner.example' },
  commissions: 3,
  ...over,
} as ExportRow);

describe('payout exports in a spreadsheet', () => {
  it('defuses a cell a spreadsheet would run as a formula, and leaves numbers and plain text alone', () => {
    expect(spreadsheetSafe('=HYPERLINK("http://evil.example","x")')).toBe(`'=HYPERLINK("http://evil.example","x")`);
    for (const lead of ['+', '-', '@', '\t', '\r']) expect(spreadsheetSafe(`${lead}cmd`)).toBe(`'${lead}cmd`);
    expect(spreadsheetSafe('-12.50')).toBe('-12.50');
    expect(spreadsheetSafe('Ada Lovelace')).toBe('Ada Lovelace');
  });

  it('our csv carries the defused name and reference; the provider files keep the values they read', () => {
    const rows = [row({ partner_name: '=cmd|" /C calc"!A0', reference: '@SUM(1+1)' })];
    const [header = [], line = []] = parse(exportFile('csv', rows).body) as string[][];
    const cell = (name: string) => line[header.indexOf(name)];
    expect(cell('partner_name')).toBe(`'=cmd|" /C calc"!A0`);
    expect(cell('reference')).toBe(`'@SUM(1+1)`);
    expect(cell('amount')).toBe('-12.50');
    expect(cell('amount_minor')).toBe('-1250');
    const [paypalLine = []] = parse(exportFile('paypal', rows).body) as string[][];
    expect(paypalLine[0]).toBe('ada@partner.example');
  });
});
