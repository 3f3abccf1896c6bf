import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { canonicalOrigin } from '../../../domain/programs/origins.js';
import { maskSecret } from '../../../domain/access/secrets.js';
import { parseBearer } from '../../../ingest/http/auth.js';
import { memoryRateLimitStore } from '../../../ingest/http/rate-limit.js';
import { parseOccurredAt } from '../../../ingest/tracking/schemas.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

// The commission rules run in the database, inside record_sale (schemas/postgres/functions/record_sale.sql).
describe.each(databaseKinds())('commission rules on %s', (kind) => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase(kind);
  });
  afterAll(async () => {
    await t?.drop();
  });
  const commission = sql('t.commission_cents', `SELECT commission_cents($1, $2, $3, $4) AS n`);
  const fee = sql('t.platform_fee_cents', `SELECT platform_fee_cents($1, $2) AS n`);
  const commissionCents = async (...args: [string, number, number, boolean]) => (await t.db.one<{ n: number | null }>(commission, args))!.n;
  const platformFeeCents = async (...args: [number, number]) => (await t.db.one<{ n: number }>(fee, args))!.n;

  it('percent and fixed pay only on the converting payment; recurring types on every payment', async () => {
    expect(await commissionCents('percent', 10, 12_345, true)).toBe(1_235);
    expect(await commissionCents('percent', 10, 12_345, false)).toBeNull();
    expect(await commissionCents('fixed', 7.5, 99, true)).toBe(750);
    expect(await commissionCents('fixed', 7.5, 99, false)).toBeNull();
    expect(await commissionCents('recurring_percent', 33.3333, 1_000, false)).toBe(333);
    expect(await commissionCents('recurring_fixed', 0.01, 1, false)).toBe(1);
  });
  it('the platform fee is basis points of the commission, rounded half up', async () => {
    expect(await platformFeeCents(1_235, 2_000)).toBe(247);
    expect(await platformFeeCents(5, 1_000)).toBe(1);
    expect(await platformFeeCents(0, 2_000)).toBe(0);
  });
});

describe('occurred_at', () => {
  const now = Date.parse('2026-11-22T12:00:00Z');
  it('takes ISO 8601 with an offset within the last 30 days and up to 5 minutes ahead', () => {
    expect(parseOccurredAt('2026-11-22T13:00:00+01:00', now)?.toISOString()).toBe('2026-11-22T12:00:00.000Z');
    expect(parseOccurredAt('2026-10-24T12:00:00.123Z', now)).toBeInstanceOf(Date);
    expect(parseOccurredAt('2026-11-22T12:04:59Z', now)).toBeInstanceOf(Date);
  });
  it.each(['2026-11-22T12:00:00', '2026-11-22', '2026-02-30T10:00:00Z', '2026-11-22T24:00:00Z', '2026-11-22T12:60:00Z',
    '2026-10-22T11:59:59Z', '2026-11-22T12:05:01Z', 'yesterday', '2026-11-22T12:00:00+2:00', ''])('refuses %s', (value) => {
    expect(parseOccurredAt(value, now)).toBeUndefined();
  });
});

describe('Authorization header', () => {
  it('distinguishes absent, malformed, empty and a token', () => {
    expect(parseBearer(undefined)).toEqual({ kind: 'absent' });
    expect(parseBearer('Basic x')).toEqual({ kind: 'malformed' });
    expect(parseBearer('bearer x')).toEqual({ kind: 'malformed' });
    // `Bearer ` arrives as `Bearer` over HTTP (trailing whitespace is stripped): the empty token.
    expect(parseBearer('Bearer')).toEqual({ kind: 'empty' });
    expect(parseBearer('Bearer    ')).toEqual({ kind: 'empty' });
    expect(parseBearer('Bearer  aff_x ')).toEqual({ kind: 'token', token: 'aff_x' });
  });
  it('masks keys to their prefix and last four characters', () => {
    expect(maskSecret('aff_abcdefghijklmnop')).toBe('aff_********mnop');
  });
});

describe('origins', () => {
  it.each([
    ['https://shop.example', 'https://shop.example'],
    ['https://shop.example/', 'https://shop.example'],
    ['http://localhost:3000', 'http://localhost:3000'],
    ['https://shop.example/path', undefined],
    ['shop.example', undefined],
    ['ftp://shop.example', undefined],
  ])('%s -> %s', (value, expected) => {
    expect(canonicalOrigin(value)).toBe(expected);
  });
});

describe('memory rate-limit store', () => {
  it('counts per key within a window and starts again in the next one', async () => {
    const store = memoryRateLimitStore();
    expect(await store.hit('a', 0, 60_000)).toBe(1);
    expect(await store.hit('a', 0, 60_000)).toBe(2);
    expect(await store.hit('b', 0, 60_000)).toBe(1);
    expect(await store.hit('a', 60_000, 60_000)).toBe(1);
  });
});
