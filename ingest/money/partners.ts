import { randomUUID } from 'node:crypto';
import { partnerBalances } from '../../domain/ledger/balances.js';
import { ledgerPage, recordManualEntry } from '../../domain/ledger/entries.js';
import { getPayoutMethod, setPayoutMethod, type PayoutMethod as Method } from '../../domain/ledger/methods.js';
import { auditContextOf } from '../http/audit.js';
import { notFound } from '../http/errors.js';
import { M } from '../http/messages.js';
import type { ZodApp } from '../http/schemas.js';
import { config, idempotencyKey, moneyAccess, type MoneyContext } from './context.js';
import {
  AdjustmentOk, AdjustmentRequest, Balance, LedgerCursor, LedgerEntry, LedgerQuery, PartnerParams, PayoutMethod, PayoutMethodRequest, data, moneyErrors, page,
} from './schemas.js';
import { entryOut } from './views.js';

const methodOf = (b: { method: Method['method']; email?: string; name?: string; receiver_type?: 'PERSON' | 'INSTITUTION'; note?: string }): Method => {
  if (b.method === 'paypal') return { method: 'paypal', email: b.email! };
  if (b.method === 'wise') return { method: 'wise', email: b.email!, name: b.name!, receiver_type: b.receiver_type ?? 'PERSON' };
  return { method: 'manual', note: b.note ?? null };
};

/** A partner's money in the program: its ledger (cursor pages), its balances, an owner's adjustments, its payout method. */
export function partnerMoneyRoutes(app: ZodApp, { db, auth }: MoneyContext) {
  const { read, write } = moneyAccess(auth);

  app.get(
    '/programs/:programId/partners/:partnerId/ledger',
    {
      config,
      ...read,
      schema: { summary: "A partner's ledger entries, oldest first (cursor pages)", params: PartnerParams, querystring: LedgerQuery, response: { 200: page(LedgerEntry), ...moneyErrors } },
    },
    async (request) => {
      const { programId, partnerId } = request.params;
      const after = request.query.cursor ? Number(request.query.cursor.id) : undefined;
      const result = await ledgerPage(db, programId, partnerId, after, request.query.limit ?? 50);
      return { data: result.items.map(entryOut), has_more: result.next !== undefined, next_cursor: result.next ? LedgerCursor.encode(result.next) : null };
    },
  );

  app.get(
    '/programs/:programId/partners/:partnerId/balance',
    {
      config,
      ...read,
      schema: { summary: "A partner's balances per currency: pending, held, approved, processing, paid", params: PartnerParams, response: { 200: data(Balance.array()), ...moneyErrors } },
    },
    async (request) => ({ data: await partnerBalances(db, request.params.programId, request.params.partnerId) }),
  );

  app.post(
    '/programs/:programId/partners/:partnerId/adjustments',
    {
      config,
      ...write,
      schema: {
        summary: 'A manual ledger entry with a reason (owners); an Idempotency-Key header makes an identical retry harmless',
        params: PartnerParams,
        body: AdjustmentRequest,
        response: { 200: AdjustmentOk, ...moneyErrors },
      },
    },
    async (request) => {
      const key = idempotencyKey(request) ?? randomUUID();
      const { programId, partnerId } = request.params;
      const b = request.body;
      const { entry, replayed } = await recordManualEntry(db, { programId, partnerId, amountMinor: b.amount_minor, currency: b.currency, reason: b.reason, key }, auditContextOf(request));
      return { data: entryOut(entry), replayed };
    },
  );

  app.get(
    '/programs/:programId/partners/:partnerId/payout-method',
    { config, ...read, schema: { summary: "A partner's payout method", params: PartnerParams, response: { 200: data(PayoutMethod), ...moneyErrors } } },
    async (request) => {
      const method = await getPayoutMethod(db, request.params.programId, request.params.partnerId);
      if (!method) throw notFound(M.money.noMethod);
      return { data: method };
    },
  );

  app.put(
    '/programs/:programId/partners/:partnerId/payout-method',
    {
      config,
      ...write,
      schema: {
        summary: "Set a partner's payout method (owners, until partners set it in the portal): paypal email, wise email and name, or manual",
        params: PartnerParams,
        body: PayoutMethodRequest,
        response: { 200: data(PayoutMethod), ...moneyErrors },
      },
    },
    async (request) => ({ data: await setPayoutMethod(db, request.params.programId, request.params.partnerId, methodOf(request.body), auditContextOf(request)) }),
  );
}
