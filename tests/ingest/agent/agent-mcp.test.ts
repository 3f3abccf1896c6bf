import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../../core/db.js';
import { migrateWarehouse } from '../../../core/warehouse-migrate.js';
import { openWarehouse, type Warehouse } from '../../../core/warehouse.js';
import { OPERATIONS } from '../../../ingest/agent/operations.js';
import { agentWorld, agentWriteCounts, bearer, exampleArguments, httpRequest, operationsOnPrograms, type AgentWorld } from '../../support/agent.js';
import { databaseKinds } from '../../support/databases.js';

const NOT_FOUND = { data: null, error: { status: 404, name: 'NotFoundError', message: 'Program not found', details: {} } };

let dir: string;
let warehouse: Warehouse;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ats-agent-mcp-'));
  warehouse = await openWarehouse({ kind: 'chdb', path: join(dir, 'ch') });
  await migrateWarehouse(warehouse);
});
afterAll(async () => {
  await warehouse?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each(databaseKinds())('agent MCP server on %s', (kind) => {
  let w: AgentWorld;
  let base: URL;
  const clients: Client[] = [];

  beforeAll(async () => {
    w = await agentWorld(kind, warehouse);
    const address = await w.app.listen({ port: 0, host: '127.0.0.1' });
    base = new URL('/api/agent/v1/mcp', address);
  }, 240_000);
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    await w?.app.close();
    await w?.t.drop();
  });

  /** The SDK's own client over its Streamable HTTP transport, authenticated with the key. */
  async function connect(key: string): Promise<Client> {
    const client = new Client({ name: 'agent-mcp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(base, { requestInit: { headers: bearer(key) } }));
    clients.push(client);
    return client;
  }

  const structured = (result: unknown) => (result as { structuredContent: Record<string, unknown> }).structuredContent;
  const textOf = (result: unknown) => JSON.parse((result as { content: { type: string; text: string }[] }).content[0]!.text);

  it('lists every tool for a key with every scope, annotated, with the HTTP routes input fields', async () => {
    const client = await connect(w.keys.a);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(OPERATIONS.map((op) => op.name).sort());
    for (const op of OPERATIONS) {
      const tool = tools.find((t) => t.name === op.name)!;
      expect(tool.annotations, op.name).toEqual({ ...op.annotations, openWorldHint: false });
      const fields = [op.params, op.query, op.body].flatMap((part) => Object.keys((part as unknown as { shape?: object } | undefined)?.shape ?? {}));
      expect(Object.keys(tool.inputSchema.properties ?? {}).sort(), op.name).toEqual(fields.sort());
    }
    const readOnly = tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name);
    expect(readOnly).not.toContain('create_partner');
    expect(tools.find((t) => t.name === 'set_link_enabled')!.annotations!.destructiveHint).toBe(true);
  });

  it("lists only the tools of the key's scopes, and refuses the others", async () => {
    const client = await connect(w.keys.readOnly);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(OPERATIONS.filter((op) => op.scope === 'programs:read').map((op) => op.name).sort());
    const before = await agentWriteCounts(w.t.db);
    for (const op of OPERATIONS.filter((o) => o.scope !== 'programs:read')) {
      const outcome = await client.callTool({ name: op.name, arguments: exampleArguments(op, w.a) }).then(
        (result) => ({ refused: result.isError === true, text: JSON.stringify(result.content) }),
        (error: Error) => ({ refused: true, text: error.message }),
      );
      expect(outcome.refused, op.name).toBe(true);
      expect(outcome.text).toMatch(/not found|disabled/i);
    }
    expect(await agentWriteCounts(w.t.db)).toEqual(before);
  });

  it('every tool answers what its HTTP route answers', async () => {
    const client = await connect(w.keys.a);
    for (const op of OPERATIONS.filter((o) => o.annotations.readOnlyHint)) {
      const args = exampleArguments(op, w.a);
      const result = await client.callTool({ name: op.name, arguments: args });
      expect(result.isError, `${op.name}: ${JSON.stringify(result.content)}`).toBeFalsy();
      const http = (await w.app.inject({ ...httpRequest(op, args), headers: bearer(w.keys.a) } as never)).json();
      const tool = structured(result);
      expect(textOf(result)).toEqual(tool);
      if (op.name === 'get_integration_status') {
        // Stamped with the time of the answer.
        delete (tool.data as Record<string, unknown>).lastUpdated;
        delete http.data.lastUpdated;
      }
      expect(tool, op.name).toEqual(http);
    }
    // Performance: the dashboard's numbers.
    const perf = await client.callTool({ name: 'get_performance', arguments: { programId: w.a.programId, period: '30d' } });
    const dashboard = await w.app.inject({ method: 'GET', url: `/api/tracking/performance/${w.a.programId}?period=30d`, headers: bearer(w.a.workspace.ownerToken) });
    expect(structured(perf)).toEqual(dashboard.json());
    expect((structured(perf).metrics as { totalClicks: number }).totalClicks).toBeGreaterThan(0);
  });

  it('write tools are idempotent, audit-logged with the key id, and move no money', async () => {
    const client = await connect(w.keys.a);
    const before = await agentWriteCounts(w.t.db);
    const partner = { programId: w.a.programId, name: 'MCP partner', aff_code: `mcp-${kind}` };
    const created = structured(await client.callTool({ name: 'create_partner', arguments: partner }));
    const again = structured(await client.callTool({ name: 'create_partner', arguments: partner }));
    expect((created.data as { created: boolean }).created).toBe(true);
    expect(again.data).toEqual({ ...(created.data as object), created: false });
    const off = structured(await client.callTool({ name: 'set_link_enabled', arguments: { programId: w.a.programId, affCode: `mcp-${kind}`, enabled: false } }));
    expect(off.data).toEqual({ aff_code: `mcp-${kind}`, enabled: false, changed: true });
    const run = { programId: w.a.programId, event_type: 'click', reference: `mcp-run-${kind}` };
    expect((structured(await client.callTool({ name: 'run_test_event', arguments: run })).data as { created: boolean }).created).toBe(true);
    expect((structured(await client.callTool({ name: 'run_test_event', arguments: run })).data as { created: boolean }).created).toBe(false);
    const after = await agentWriteCounts(w.t.db);
    expect(after).toMatchObject({
      partners: before.partners + 1,
      links: before.links + 1,
      enabled_links: before.enabled_links,
      tracking_logs: before.tracking_logs + 1,
      sales: before.sales,
      commissions: before.commissions,
      fees: before.fees,
      refunds: before.refunds,
      ledger_entries: before.ledger_entries,
      payouts: before.payouts,
      approved: before.approved,
    });
    const audit = await w.t.db.many<{ key_id: number; action: string; outcome: string }>(
      sql('t.mcp_audit', `SELECT key_id, action, outcome FROM agent_audit_log WHERE target IN ($1, 'click') AND program_id = $2 ORDER BY id`),
      [`mcp-${kind}`, w.a.programId],
    );
    expect(audit.map((a) => [Number(a.key_id), a.action, a.outcome])).toEqual(
      expect.arrayContaining([
        [w.keys.aId, 'partner.create', 'created'],
        [w.keys.aId, 'partner.create', 'existing'],
        [w.keys.aId, 'link.disable', 'updated'],
        [w.keys.aId, 'test_event.run', 'created'],
      ]),
    );
  });

  it("refuses another workspace's ids in every tool with the route's 404, and writes nothing", async () => {
    const client = await connect(w.keys.b);
    const before = await agentWriteCounts(w.t.db);
    for (const op of operationsOnPrograms) {
      const result = await client.callTool({ name: op.name, arguments: exampleArguments(op, w.a) });
      expect(result.isError, op.name).toBe(true);
      expect(structured(result), op.name).toEqual(NOT_FOUND);
      const unknown = await client.callTool({ name: op.name, arguments: exampleArguments(op, { ...w.a, programId: w.a.programId + 999_999 }) });
      expect(structured(unknown)).toEqual(NOT_FOUND);
    }
    const link = await (await connect(w.keys.a)).callTool({ name: 'set_link_enabled', arguments: { programId: w.a.programId, affCode: w.b.affCode, enabled: false } });
    expect(structured(link)).toEqual({ data: null, error: { status: 404, name: 'NotFoundError', message: 'Referral link not found', details: {} } });
    expect(await agentWriteCounts(w.t.db)).toEqual(before);
  });

  it("validates with the route's schemas and messages", async () => {
    const client = await connect(w.keys.a);
    const backwards = await client.callTool({ name: 'list_commissions', arguments: { programId: w.a.programId, from: '2026-02-01', to: '2026-01-01' } });
    expect(backwards.isError).toBe(true);
    expect(structured(backwards)).toEqual({ data: null, error: { status: 400, name: 'BadRequestError', message: 'from must be before to', details: {} } });
    const badLimit = await client.callTool({ name: 'list_sales', arguments: { programId: w.a.programId, limit: 0 } });
    expect(badLimit.isError).toBe(true);
    expect(JSON.stringify(badLimit.content)).toContain('limit must be an integer from 1 to 100');
    // A page from the tool continues with the route's cursor, and the other way round.
    const first = structured(await client.callTool({ name: 'list_sales', arguments: { programId: w.a.programId, limit: 2 } }));
    const next = await w.app.inject({ method: 'GET', url: `/api/agent/v1/programs/${w.a.programId}/sales?limit=2&cursor=${first.next_cursor}`, headers: bearer(w.keys.a) });
    const viaTool = structured(await client.callTool({ name: 'list_sales', arguments: { programId: w.a.programId, limit: 2, cursor: first.next_cursor } }));
    expect(viaTool).toEqual(next.json());
  });

  // Issue 27, point 7. Each list: its name in the cursor, the time text its store prints, its id shape.
  const LISTS: Record<string, { list: string; time: 'postgres' | 'warehouse'; id: 'uuid' | 'bigint' | 'text' }> = {
    list_sales: { list: 'sales', time: 'postgres', id: 'uuid' },
    list_commissions: { list: 'commissions', time: 'postgres', id: 'uuid' },
    list_partners: { list: 'partners', time: 'postgres', id: 'bigint' },
    list_clicks: { list: 'clicks', time: 'warehouse', id: 'text' },
    list_ledger_entries: { list: 'ledger', time: 'postgres', id: 'bigint' },
    list_payouts: { list: 'payouts', time: 'postgres', id: 'uuid' },
    list_audit_log: { list: 'audit_log', time: 'postgres', id: 'bigint' },
  };
  const GOOD_TIME = { postgres: '2026-01-01 00:00:00.123456+00', warehouse: '2026-01-01 00:00:00.123456' };
  const GOOD_ID = { uuid: '0b7e4a5c-3f2d-4e1a-9c8b-7a6f5e4d3c2b', bigint: '42', text: '0b7e4a5c-3f2d-4e1a-9c8b-7a6f5e4d3c2b' };
  const BAD_TIMES = {
    postgres: ['2026-13-01 00:00:00+00', '2026-02-30 00:00:00+00', '2026-01-01 24:00:00+00', '2026-01-01 00:60:00+00', '2026-01-01 00:00:60+00',
      '0000-01-01 00:00:00+00', '2026-01-01 00:00:00+99', '2026-01-01 00:00:00', '2026-01-01T00:00:00Z', '2026-01-01 00:00:00.1234567+00', 'yesterday', ''],
    warehouse: ['2026-13-01 00:00:00', '2026-02-30 00:00:00', '2026-01-01 24:00:00', '1899-12-31 23:59:59', '2300-01-01 00:00:00',
      '2026-01-01 00:00:00+00', '2026-01-01T00:00:00', 'yesterday', ''],
  };
  const BAD_IDS = {
    uuid: ['1', '-1', 'not-a-uuid', '0B7E4A5C-3F2D-4E1A-9C8B-7A6F5E4D3C2B', '0b7e4a5c-3f2d-4e1a-9c8b-7a6f5e4d3c2', '0b7e4a5c-3f2d-4e1a-9c8b-7a6f5e4d3c2g', ''],
    bigint: ['0', '-1', '01', '1.5', '1e3', '9223372036854775808', '99999999999999999999999', GOOD_ID.uuid, ''],
    text: ['', 'x'.repeat(256), 'a b', 'a\u0000b'],
  };
  const encoded = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
  const listOps = OPERATIONS.filter((op) => 'cursor' in ((op.query as unknown as { shape?: object } | undefined)?.shape ?? {}));

  it('answers a decodable but invalid cursor on every list route and its tool with the cursor 400, never a 500', { timeout: 120_000 }, async () => {
    // A list added later fails here until it has a row above.
    expect(listOps.map((op) => op.name).sort()).toEqual(Object.keys(LISTS).sort());
    const client = await connect(w.keys.a);
    const message = 'cursor is not valid; pass the next_cursor of a previous page unchanged';
    for (const op of listOps) {
      const { list, time, id } = LISTS[op.name]!;
      const at = GOOD_TIME[time];
      const good = id === 'bigint' ? GOOD_ID.bigint : GOOD_ID.uuid;
      const cursors: [string, unknown][] = [
        // Today's two-field form, which reached SQL with a time Postgres or the warehouse cannot read.
        ['two fields, month 13', ['2026-13-45 25:61:61+00', good]],
        ['two fields, February 30', [time === 'postgres' ? '2026-02-30 00:00:00+00' : '2026-02-30 00:00:00', good]],
        ['two fields, year 0', ['0000-01-01 00:00:00+00', good]],
        ...BAD_TIMES[time].map((bad): [string, unknown] => [`time ${JSON.stringify(bad)}`, [list, bad, good]]),
        ...BAD_IDS[id].map((bad): [string, unknown] => [`id ${JSON.stringify(bad)}`, [list, at, bad]]),
        ['time as a number', [list, 1767225600, good]],
        ['id as a number', [list, at, 42]],
        ['an extra field', [list, at, good, 'more']],
        ['a missing id', [list, at]],
        ['only the list', [list]],
        ['an empty array', []],
        ['an object', { list, at, id: good }],
        ['a string', 'sales'],
        ['null', null],
        ...Object.values(LISTS)
          .filter((other) => other.list !== list)
          .map((other): [string, unknown] => [`a cursor of ${other.list}`, [other.list, GOOD_TIME[other.time], other.id === 'bigint' ? GOOD_ID.bigint : GOOD_ID.uuid]]),
      ];
      // The list's other path parameters (a partner's ledger): the program's own.
      const path = op.path.replace('/programs/:programId', '').replace(':partnerId', String(w.a.partnerId));
      const pathArgs = op.path.includes(':partnerId') ? { partnerId: w.a.partnerId } : {};
      for (const [name, value] of cursors) {
        const cursor = encoded(value);
        const label = `${op.name}: ${name}`;
        const http = await w.app.inject({ method: 'GET', url: `/api/agent/v1/programs/${w.a.programId}${path}?cursor=${cursor}`, headers: bearer(w.keys.a) });
        expect(http.statusCode, label).toBe(400);
        expect(http.json(), label).toEqual({ data: null, error: { status: 400, name: 'BadRequestError', message, details: {} } });
        const tool = await client.callTool({ name: op.name, arguments: { programId: w.a.programId, ...pathArgs, cursor } });
        expect(tool.isError, label).toBe(true);
        expect(JSON.stringify(tool.content), label).toContain(message);
        expect(JSON.stringify(tool.content), label).not.toContain('Internal');
      }
      // The checks refuse only what is wrong: a well-formed cursor of this list reads a page.
      const first = await w.app.inject({ method: 'GET', url: `/api/agent/v1/programs/${w.a.programId}${path}?limit=1`, headers: bearer(w.keys.a) });
      const issued = first.json().next_cursor as string | null;
      for (const cursor of [issued, encoded([list, at, good])].filter((c): c is string => c !== null)) {
        const page = await w.app.inject({ method: 'GET', url: `/api/agent/v1/programs/${w.a.programId}${path}?cursor=${cursor}`, headers: bearer(w.keys.a) });
        expect(page.statusCode, `${op.name}: ${page.body}`).toBe(200);
        const tool = await client.callTool({ name: op.name, arguments: { programId: w.a.programId, ...pathArgs, cursor } });
        expect(tool.isError, op.name).toBeFalsy();
      }
    }
  });

  it('authenticates with agent keys only: a program key or no key is 401, before any tool', async () => {
    for (const key of [w.a.apiKey, 'agt_unknown', '']) {
      const client = new Client({ name: 'agent-mcp-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(base, { requestInit: { headers: key ? bearer(key) : {} } });
      await expect(client.connect(transport), key).rejects.toThrow(/401/);
      await client.close().catch(() => undefined);
    }
    const raw = await fetch(base, {
      method: 'POST',
      headers: { ...bearer(w.a.apiKey), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('x-request-id')).toBeTruthy();
    expect(await raw.json()).toEqual({ data: null, error: { status: 401, name: 'UnauthorizedError', message: 'Invalid agent API key', details: {} } });
  });

  it('is stateless: no session id, rate-limit headers and X-Request-ID on the transport answer', async () => {
    const res = await fetch(base, {
      method: 'POST',
      headers: { ...bearer(w.keys.a), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.headers.get('x-ratelimit-limit')).toBe('120');
    expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    const body = (await res.json()) as { id: number; result: { tools: unknown[] } };
    expect(body.id).toBe(7);
    expect(body.result.tools.length).toBe(OPERATIONS.length);
    expect((await fetch(base, { method: 'GET', headers: bearer(w.keys.a) })).status).toBe(405);
  });
});
