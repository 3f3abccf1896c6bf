import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Database } from '../../../core/db.js';
import { systemContext } from '../../../domain/audit/audit.js';
import { createWorkspace } from '../../../domain/access/workspaces.js';
import { blockedOrigins, createBlockedOriginRecorder } from '../../../domain/programs/blocked-origins.js';
import { createProgram } from '../../../domain/programs/programs.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/databases.js';

const rows = sql('t.blocked_origin_rows', `SELECT count(*)::int AS n FROM blocked_origins WHERE program_id = $1`);

describe.each(databaseKinds())('origins refused for a program, on %s', (kind) => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase(kind);
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('keeps at most 50 per program, and once the list is full sends no statement for a minute', async () => {
    const workspace = await createWorkspace(t.db, 'Origins');
    const program = await createProgram(
      t.db,
      workspace,
      { name: 'Origins', domain: 'shop.origins.example', commission_type: 'percent', commission_rate: 10, attribution_window_days: 60, lead_auth: 'server_required', paymentTrackingMode: 's2s', allowed_origins: [] },
      systemContext('test'),
    );
    // The real database, with the recorder's statements counted on their way to it.
    let statements = 0;
    const counted = { ...t.db, many: (...args: Parameters<Database['many']>) => ((statements += 1), t.db.many(...args)) } as Database;
    let clock = 1_000_000;
    const recorder = createBlockedOriginRecorder(counted, (error) => { throw error; }, () => clock);
    const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
    for (let i = 0; i < 51; i++) {
      recorder.note(program.id, `https://made-up-${i}.example`);
      await settle();
    }
    expect((await t.db.one<{ n: number }>(rows, [program.id]))!.n).toBe(50);
    expect(statements).toBe(51);
    // Full: more made-up origins within the minute reach no statement.
    for (let i = 51; i < 80; i++) recorder.note(program.id, `https://made-up-${i}.example`);
    await settle();
    expect(statements).toBe(51);
    // A minute on, one statement again (still full: nothing written).
    clock += 60_001;
    recorder.note(program.id, 'https://made-up-99.example');
    await settle();
    expect(statements).toBe(52);
    expect((await t.db.one<{ n: number }>(rows, [program.id]))!.n).toBe(50);
    expect((await blockedOrigins(t.db, program.id, 100)).length).toBe(50);
  });
});
