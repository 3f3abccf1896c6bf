-- Issue 30, points 1 to 3 (partner-program.md, "Commission rules and versions"): every change of a
-- program's or a partner group's terms is a rule version with its effective_from; each commission
-- records the version that computed it; recurring commissions may stop recurring_months after the
-- customer's first purchase. docs/decisions/commission-terms.md.

-- recurring_months: null for lifetime; only the recurring types read it. The programs row keeps the
-- terms of its latest version (the settings read shows them); record_sale reads the versions.
ALTER TABLE programs ADD COLUMN recurring_months integer CHECK (recurring_months BETWEEN 1 AND 120);

-- Partner groups: a name, optional terms of their own (as versions). Deleting one is refused while
-- a partner is in it; a deleted group keeps its row (deleted_at) so the versions its partners'
-- commissions recorded stay listed.
CREATE TABLE partner_groups (
  id          bigserial PRIMARY KEY,
  program_id  bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz
);
CREATE INDEX partner_groups_program ON partner_groups (program_id, id);

-- A partner belongs to at most one group of a program: the group is a column of its program record.
ALTER TABLE partner_programs ADD COLUMN group_id bigint REFERENCES partner_groups (id);
CREATE INDEX partner_programs_group ON partner_programs (group_id) WHERE group_id IS NOT NULL;

-- The versions: group_id null for the program's own terms. id is the version every commission and
-- its ledger entry record (ledger_entries.rule_version is an integer); version numbers the
-- versions of one program, 1 being its first terms. changed_by_*: the audit log's actor.
CREATE TABLE commission_rule_versions (
  id                integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  program_id        bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  group_id          bigint REFERENCES partner_groups (id),
  version           integer NOT NULL,
  effective_from    timestamptz NOT NULL,
  commission_type   text NOT NULL CHECK (commission_type IN ('percent', 'fixed', 'recurring_percent', 'recurring_fixed')),
  commission_rate   numeric(14, 4) NOT NULL CHECK (commission_rate > 0),
  recurring_months  integer CHECK (recurring_months BETWEEN 1 AND 120),
  changed_by_type   text NOT NULL,
  changed_by_id     text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (program_id, version),
  UNIQUE NULLS NOT DISTINCT (program_id, group_id, effective_from)
);
-- The sale's one lookup: the program's versions (and its groups'), by time.
CREATE INDEX commission_rule_versions_lookup ON commission_rule_versions (program_id, effective_from);

-- Version 1 of every program: its terms as they are, in effect since it was created.
INSERT INTO commission_rule_versions (program_id, group_id, version, effective_from, commission_type, commission_rate,
                                      changed_by_type, changed_by_id, created_at)
SELECT p.id, NULL, 1, p.created_at, p.commission_type, p.commission_rate, 'system', 'migration-0040', now()
  FROM programs p;

-- The version of each commission; the commissions made so far were all computed by version 1.
-- Ledger entries are append-only and keep rule_version null for them (decisions: commission-terms.md).
ALTER TABLE commissions ADD COLUMN rule_version integer;
UPDATE commissions c SET rule_version = v.id
  FROM commission_rule_versions v WHERE v.program_id = c.program_id AND v.version = 1;

-- Why a recorded sale earned no commission when its terms would otherwise have paid one
-- ('recurring_limit_reached'); null otherwise.
ALTER TABLE sale_events ADD COLUMN commission_skipped_reason text;
