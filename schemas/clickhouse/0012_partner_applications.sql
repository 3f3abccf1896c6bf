-- Issue 31: applications and approvals (partner.applied, partner.approved; docs/decisions/partner-portal.md).
-- The partner-program record's state is partner_program_changed's; these keep when each application
-- arrived and each approval was given, for the time from one to the other. The applicant's name,
-- email and website stay in Postgres (the brand reads them in its console): not analysts' data.

CREATE TABLE IF NOT EXISTS partner_applied (
  event_id            UUID,
  program_id          Int64,
  occurred_at         DateTime64(6, 'UTC'),
  test                Bool,
  partner_program_id  Int64,
  partner_id          Int64,
  created_at          DateTime64(6, 'UTC'),
  loaded_at           DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS partner_approved (
  event_id            UUID,
  program_id          Int64,
  occurred_at         DateTime64(6, 'UTC'),
  test                Bool,
  partner_program_id  Int64,
  partner_id          Int64,
  approved_at         DateTime64(6, 'UTC'),
  loaded_at           DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (program_id, toDate(occurred_at), event_id)
SETTINGS non_replicated_deduplication_window = 1000;
