import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../core/db.js';
import { migrateWarehouse } from '../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../core/warehouse.js';
import { DEFAULT_AVRO_DIR, loadCatalog } from '../../processors/avro/catalog.js';
import { createAvroCodec } from '../../processors/avro/codec.js';
import { eventRows } from '../../processors/loader/mappers.js';
import { EVENT_TYPES, PAYLOAD_FIELDS, type EventType, type OutboxRow } from '../../schemas/event-contract.js';
import { buildTestApp, createTestProgram, freshIp } from '../support/app.js';
import { everyMoneyEvent } from '../support/money.js';
import { everyPartnerEvent } from '../support/partners.js';
import { partlyRefundedProcessorSale } from '../support/processor.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

type Json = Record<string, unknown>;
type Schema = Json & { fields: Json[] };

const contractFields = (type: EventType) => Object.keys(PAYLOAD_FIELDS[type]).sort();
const avroPayloadFields = (file: string) => {
  const schema = JSON.parse(readFileSync(join(DEFAULT_AVRO_DIR, file), 'utf8')) as Schema;
  return (schema.fields.find((f) => f.name === 'payload')!.type as Schema).fields.map((f) => f.name as string).sort();
};

describe('the Avro catalog is the contract', () => {
  const catalog = loadCatalog(DEFAULT_AVRO_DIR);

  it('has exactly the contract’s event types', () => {
    expect([...catalog.events.keys()].sort()).toEqual([...EVENT_TYPES].sort());
  });

  it('every current schema carries exactly the payload’s fields, and every released version only fields of it', () => {
    for (const type of EVENT_TYPES) {
      const event = catalog.events.get(type)!;
      expect(avroPayloadFields(`${type}.avsc`), `${type}.avsc`).toEqual(contractFields(type));
      // An older version may lack a field added later (the catalog's compatibility check makes the
      // current schema give it a default); it never has one the contract dropped.
      const latest = event.versions.at(-1)!;
      expect(avroPayloadFields(latest.file), `${type} v${latest.version}`).toEqual(contractFields(type));
      for (const version of event.versions) {
        expect(contractFields(type), `${type} v${version.version}`).toEqual(expect.arrayContaining(avroPayloadFields(version.file)));
      }
    }
  });
});

describe('the service’s real events, from the outbox to the warehouse, keep to the contract', () => {
  let t: TestDatabase;
  let app: FastifyInstance;
  let rows: OutboxRow[];
  let dir: string;
  let warehouse: Warehouse;

  beforeAll(async () => {
    t = await createTestDatabase('pglite');
    app = await buildTestApp(t.db);
    const program = await createTestProgram(app, t.db, { commission_type: 'percent', commission_rate: 10 });
    const post = async (url: string, payload: Json, key?: string) => {
      const res = await app.inject({
        method: 'POST',
        url,
        headers: { 'x-forwarded-for': freshIp(), ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) },
        payload,
      });
      if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
      return res.json() as Json;
    };
    const click = async (test = false) =>
      (await post('/api/v1/track/click', { affiliate_url: `https://shop.test.example/?aff=${program.affCode}`, additional_data: { test_mode: test } }))
        .click_id as string;
    // A test click: click.recorded and test_event.logged, both from the click's one SQL statement.
    await click(true);
    // Lead, paid sale (conversion, commission, fee), refund (status change, reversals).
    await post('/api/v1/track/lead', { click_id: await click(), customer_key: 'cust-1' }, program.apiKey);
    await post('/api/v1/track/sale', { transaction_id: 'txn-1', amount_cents: 5_000, customer_key: 'cust-1', currency: 'EUR' }, program.apiKey);
    await post('/api/v1/track/refund', { transaction_id: 'txn-1', reason: 'refund' }, program.apiKey);
    // A test-mode lead: test_event.logged from logTestEvent's SQL.
    await post('/api/v1/track/lead', { click_id: await click(true), additional_data: { test_mode: true } });
    // A processor payment partly refunded: sale.partially_refunded, commission.adjusted, platform_fee.adjusted.
    await partlyRefundedProcessorSale(app, program.programId, await click());
    // The ledger and payouts (issue 34): ledger_entry.recorded, commission.approved, payout.created, .canceled, .paid.
    await everyMoneyEvent(app, t.db);
    // Issue 31: partner.applied, partner.approved, and partner_program.changed of each state.
    await everyPartnerEvent(app, program);
    // Issue 30: fx_rate.recorded, from an owner's rates file.
    const fx = await app.inject({
      method: 'POST',
      url: '/api/tracking/fx-rates',
      headers: { authorization: `Bearer ${program.workspace.ownerToken}`, 'content-type': 'text/csv' },
      payload: `Date,USD,VND,\n${new Date().toISOString().slice(0, 10)},1.0512,27395.5,\n`,
    });
    if (fx.statusCode !== 200) throw new Error(`fx-rates answered ${fx.statusCode}: ${fx.body}`);
    rows = await t.db.many<OutboxRow>(
      sql(
        't.contract_outbox',
        `SELECT id, event_id, event_type, aggregate_key, program_id, test, to_jsonb(occurred_at) #>> '{}' AS occurred_at, payload
           FROM outbox ORDER BY id`,
      ),
    );

    dir = await mkdtemp(join(tmpdir(), 'ats-contract-'));
    warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
    await migrateWarehouse(warehouse);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await warehouse?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('every event type is emitted, and every stored payload has exactly its type’s fields (SQL-built ones too)', () => {
    expect(new Set(rows.map((r) => r.event_type))).toEqual(new Set(EVENT_TYPES));
    for (const row of rows) {
      expect(Object.keys(row.payload).sort(), `${row.event_type} #${row.id}`).toEqual(contractFields(row.event_type as EventType));
    }
    // The click path's statement wrote these two: checked by name so a rename of the route cannot hide them.
    const sqlBuilt = rows.filter((r) => r.event_type === 'click.recorded' || r.event_type === 'test_event.logged');
    expect(sqlBuilt.filter((r) => r.event_type === 'test_event.logged').map((r) => r.payload.event_type)).toEqual(['click', 'click', 'lead']);
  });

  it('every ClickHouse table a mapper writes has exactly the columns it produces (besides defaulted ones)', async () => {
    const codec = createAvroCodec();
    const columns = new Map<string, string[]>();
    for (const c of await warehouse.query<{ table: string; name: string }>(
      sql('t.contract_columns', `SELECT table, name FROM system.columns WHERE database = currentDatabase() AND default_kind = '' ORDER BY table, position`),
    )) {
      columns.set(c.table, [...(columns.get(c.table) ?? []), c.name]);
    }
    const written = new Map<EventType, Set<string>>();
    for (const row of rows) {
      // The bytes the relay publishes, decoded as a loader reads them.
      const mapped = eventRows(codec.decode(codec.message(row).value));
      expect(mapped.length, row.event_type).toBeGreaterThan(0);
      for (const [table, values] of mapped) {
        expect(columns.has(table), `${row.event_type} writes ${table}`).toBe(true);
        expect(Object.keys(values).sort(), `${row.event_type} -> ${table}`).toEqual([...columns.get(table)!].sort());
        written.set(row.event_type as EventType, (written.get(row.event_type as EventType) ?? new Set()).add(table));
      }
    }
    expect([...written.keys()].sort()).toEqual([...EVENT_TYPES].sort());
    // Every event type has its own event table, named after it.
    for (const type of EVENT_TYPES) expect(written.get(type)).toContain(type.replace('.', '_'));
  });
});
