-- Payment processor integration (issue 12): connections, signed webhook events, what the
-- processor's ids point at. Every event's effects and its row here commit in one transaction.

-- A program's connection to a processor account, made by a workspace owner. Several programs of
-- a brand may share one account; events then name the program in their metadata.
CREATE TABLE processor_connections (
  program_id    bigint PRIMARY KEY REFERENCES programs (id) ON DELETE CASCADE,
  account_id    text NOT NULL,
  connected_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX processor_connections_account ON processor_connections (account_id);

-- What the processor last said about an account (account.updated, account.application.deauthorized),
-- kept whether or not a program is connected yet, so the order of connecting and events does not matter.
-- reported_at is the event's own time: an older event never overwrites a newer one.
CREATE TABLE processor_accounts (
  account_id         text PRIMARY KEY,
  charges_enabled    boolean NOT NULL DEFAULT false,
  payouts_enabled    boolean NOT NULL DEFAULT false,
  details_submitted  boolean NOT NULL DEFAULT false,
  reported_at        timestamptz,
  deauthorized_at    timestamptz
);

-- One row per processor event id (the idempotency key). outcome: recorded (its effects applied),
-- skipped (reason says why nothing was applied), ignored (a type we do not handle), waiting (a
-- refund or dispute whose payment is not known yet; payload kept to apply it when it is).
CREATE TABLE processor_events (
  event_id          text PRIMARY KEY,
  event_type        text NOT NULL,
  account_id        text,
  program_id        bigint REFERENCES programs (id) ON DELETE CASCADE,
  livemode          boolean NOT NULL,
  outcome           text NOT NULL CHECK (outcome IN ('recorded', 'skipped', 'ignored', 'waiting')),
  reason            text,
  sale_id           uuid,
  transaction_id    text,
  waiting_for       text[],
  payload           jsonb,
  deliveries        integer NOT NULL DEFAULT 1,
  event_created_at  timestamptz NOT NULL,
  received_at       timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX processor_events_program ON processor_events (program_id, received_at DESC);
CREATE INDEX processor_events_waiting ON processor_events USING gin (waiting_for) WHERE outcome = 'waiting';

-- The processor's payment ids (payment intent, charge, invoice) and the transaction_id of the sale
-- they paid, so a refund or dispute (which carries a charge and a payment intent) finds its sale.
CREATE TABLE processor_payment_refs (
  ref             text PRIMARY KEY,
  transaction_id  text NOT NULL
);

-- Resolution step 3: a processor customer id seen on an earlier attributed payment.
CREATE TABLE processor_customers (
  program_id             bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  processor_customer_id  text NOT NULL,
  customer_id            bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
  PRIMARY KEY (program_id, processor_customer_id)
);

-- Resolution step 2: a lead record's email.
CREATE INDEX customers_program_email ON customers (program_id, lower(email)) WHERE email IS NOT NULL;
