/**
 * The clients' wire types are generated from the surfaces' zod schemas (scripts/client-types.ts):
 * a committed file that differs from what the schemas give fails here, so an SDK's types cannot
 * drift from the routes (run npm run build:client-types when this fails).
 */
import { describe, expect, it } from 'vitest';
import { LeadRequest, RefundRequest, SaleResponse } from '../../ingest/tracking/schemas.js';
import { CLIENTS, clientTypes, staleClientTypes } from '../../scripts/client-types.js';

describe('the clients\' generated wire types', () => {
  it('every committed file is the one the schemas give (run npm run build:client-types when this fails)', async () => {
    const stale = await staleClientTypes();
    for (const file of stale) expect(file.actual, file.out).toBe(file.expected);
    expect(stale).toEqual([]);
    expect(CLIENTS.map((c) => c.out)).toEqual(['clients/server-sdk/src/wire.ts', 'clients/browser/src/wire.ts', 'clients/cli/src/wire.ts']);
  });

  it('requests are typed by what the service accepts, responses by what it answers', async () => {
    const sdk = await clientTypes(CLIENTS[0]!);
    // RefundRequest.reason has a default: optional to send, always answered.
    expect(RefundRequest.parse({ transaction_id: 'in_1' })).toEqual({ transaction_id: 'in_1', reason: 'refund' });
    expect(sdk).toContain("export interface RefundRequest {\n  transaction_id: string;\n  reason?: 'refund' | 'chargeback';");
    expect(sdk).toContain("  reason: 'refund' | 'chargeback';\n  sale_status: 'paid' | 'refunded' | 'chargeback';");
    // Top-level bodies refuse unknown fields, additional_data is an open bag: the types say the same.
    expect(LeadRequest.safeParse({ customer_key: 'c', extra: 1 }).success).toBe(false);
    expect(sdk).toMatch(/export interface LeadRequest \{\n(?:(?!\n\}).)*additional_data\?: \{\n {4}test_mode\?: boolean;\n {4}program_id\?: number;\n {4}\[k: string\]: unknown;/s);
    expect(sdk).not.toMatch(/export interface LeadRequest \{\n {2}\[k: string\]/);
    // The sale's currency is judged by the route (any value may be sent; a wrong one is 422), so unknown, not an object.
    expect(sdk).toContain('  currency?: unknown;');
    // A named schema inside another is a reference to its declaration, declared once.
    expect(sdk).toContain('export interface SaleResponse {\n  data: SaleData;');
    expect(sdk.match(/export interface SaleData \{/g)).toHaveLength(1);
    expect(Object.keys(SaleResponse.shape)).toEqual(['data', 'warnings']);
  });
});
