import { copyFile, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql, type Database } from '../../core/db.js';

/**
 * The numbered migrations as they were before the SQL functions moved to
 * schemas/postgres/functions/ (issue 28), verbatim: a database that ran the old migrations.
 */
export const FIXTURE_0024 = fileURLToPath(new URL('../fixtures/postgres-0024/', import.meta.url));

/** A copy of the fixture's migrations before `file`: a database as an older version left it. Remove it afterwards. */
export async function fixtureBefore(file: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ats-migrations-'));
  for (const name of (await readdir(FIXTURE_0024)).filter((n) => n.endsWith('.sql') && n < file)) {
    await copyFile(join(FIXTURE_0024, name), join(dir, name));
  }
  return dir;
}

const AUDIT_LOG = fileURLToPath(new URL('../../schemas/postgres/0031_audit_log.sql', import.meta.url));

/**
 * Today's brand-side writes append audit entries (0031, issue 32), so the admin calls that set up an
 * old schema's data with today's code (program, key, partner, processor connection) need its table:
 * made before them, dropped before the upgrade makes it again. The writes under test never touch it.
 */
export const auditLogForOldSchema = {
  async create(db: Database): Promise<void> {
    const text = await readFile(AUDIT_LOG, 'utf8');
    await db.transaction((tx) => tx.script(text));
    await db.transaction((tx) => tx.script(TERMS_SHIM));
  },
  async drop(db: Database): Promise<void> {
    await db.many(sql('test.drop_audit_log', 'DROP TABLE audit_log'));
    await db.transaction((tx) => tx.script(TERMS_SHIM_DROP));
  },
};

/**
 * Likewise, today's program creation writes its terms as rule version 1 (0040, issue 30) and reads
 * the settings of 0045, 0050 and 0060, and today's click writes its sub-ids and client address (0055):
 * the columns and tables they use, made with the audit log's and dropped with it, before the later
 * migrations make them.
 */
const TERMS_SHIM = `
ALTER TABLE programs ADD COLUMN reporting_currency text NOT NULL DEFAULT 'USD', ADD COLUMN applications_open boolean NOT NULL DEFAULT false,
  ADD COLUMN fraud_rules jsonb NOT NULL DEFAULT '{}';
ALTER TABLE clicks ADD COLUMN sub1 text, ADD COLUMN sub2 text, ADD COLUMN sub3 text, ADD COLUMN sub4 text, ADD COLUMN sub5 text,
  ADD COLUMN client_ip inet;
ALTER TABLE programs ADD COLUMN recurring_months integer;
CREATE TABLE commission_rule_versions (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, program_id bigint NOT NULL, group_id bigint, version integer NOT NULL,
  effective_from timestamptz NOT NULL, commission_type text NOT NULL, commission_rate numeric(14, 4) NOT NULL, recurring_months integer,
  changed_by_type text NOT NULL, changed_by_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE partner_groups (id bigserial PRIMARY KEY, name text);`;
const TERMS_SHIM_DROP = `DROP TABLE commission_rule_versions; DROP TABLE partner_groups; ALTER TABLE programs DROP COLUMN recurring_months;
ALTER TABLE programs DROP COLUMN reporting_currency, DROP COLUMN applications_open, DROP COLUMN fraud_rules;
ALTER TABLE clicks DROP COLUMN sub1, DROP COLUMN sub2, DROP COLUMN sub3, DROP COLUMN sub4, DROP COLUMN sub5, DROP COLUMN client_ip;`;
