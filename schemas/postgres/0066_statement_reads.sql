-- Issue 33, point 9: a month's statement reads at most a day of rows, not the program's whole
-- history (docs/decisions/ledger.md, "What a statement reads"; docs/performance.md, "The month's
-- statement").

-- The sales and ledger entries of a span of time by when they were recorded (the statement's time
-- basis, created_at); sale_events_program_time is by occurred_at, and the ledger had no time index.
CREATE INDEX sale_events_program_created ON sale_events (program_id, created_at);
CREATE INDEX ledger_entries_program_created ON ledger_entries (program_id, created_at);

-- Checkpoints: a month's statement up to `upto`, a closed instant (a UTC midnight within the month,
-- or the month's end), stored by the statement's read (domain/ledger/statements.ts) the first time
-- it can use one, never by the sale, refund or payout paths. An instant is closed once it is a
-- minute past and no transaction that started before it is still running: the rows a statement
-- reads are written with their transaction's start time (created_at), so then none can still
-- appear before it. Append-only (the trigger of functions/refuse_changes_to_append_only_table.sql).
-- A statement reads its month's latest checkpoint and the rows since; the month's end's checkpoint
-- gives the next month's opening balances.
CREATE TABLE statement_checkpoints (
  program_id  bigint NOT NULL,
  month       date NOT NULL,
  upto        timestamptz NOT NULL,
  stored_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (program_id, month, upto)
);
-- The lines as of upto: every partner and currency with a non-zero opening or an entry in
-- [month, upto); the sums by kind; entries and net_entries count the entries (all, and those of the
-- kinds net commissions sum), so that a line or a currency whose entries sum to zero still shows.
CREATE TABLE statement_checkpoint_lines (
  program_id   bigint NOT NULL,
  month        date NOT NULL,
  upto         timestamptz NOT NULL,
  partner_id   bigint NOT NULL,
  currency     sale_currency NOT NULL,
  opening      bigint NOT NULL,
  commissions  bigint NOT NULL,
  adjustments  bigint NOT NULL,
  reversals    bigint NOT NULL,
  clawbacks    bigint NOT NULL,
  manual       bigint NOT NULL,
  payouts      bigint NOT NULL,
  entries      integer NOT NULL,
  net_entries  integer NOT NULL,
  PRIMARY KEY (program_id, month, upto, partner_id, currency),
  FOREIGN KEY (program_id, month, upto) REFERENCES statement_checkpoints (program_id, month, upto)
);
-- The real sales recorded in [month, upto), per currency (refunds are read from their own rows).
CREATE TABLE statement_checkpoint_sales (
  program_id   bigint NOT NULL,
  month        date NOT NULL,
  upto         timestamptz NOT NULL,
  currency     sale_currency NOT NULL,
  gross_sales  bigint NOT NULL,
  sales        integer NOT NULL,
  PRIMARY KEY (program_id, month, upto, currency),
  FOREIGN KEY (program_id, month, upto) REFERENCES statement_checkpoints (program_id, month, upto)
);
