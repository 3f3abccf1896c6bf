-- Issue 27, points 3 and 8: who may act on a processor account, and test and live kept apart.

-- Point 3. A processor account belongs to one workspace, which connects it with the signing secret
-- of the webhook endpoint it created in its own processor dashboard. That endpoint posts to the
-- account's own URL (/api/v1/webhooks/processor/<account_id>), whose events are checked with this
-- secret; the first valid one marks the claim verified. An unverified claim may be replaced by
-- another workspace's (nobody holds an account id by typing it); a verified one may not.
-- secret, previous_secret: sealed with SECRETS_KEY (core/secret-box.ts), never stored in clear; the
-- previous one stays valid until previous_until after a rotation. claim changes whenever another
-- workspace takes the account over, so a verification in flight for the old claim cannot verify the new.
CREATE TABLE processor_account_owners (
  account_id       text PRIMARY KEY,
  workspace_id     bigint NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  claim            uuid NOT NULL DEFAULT gen_random_uuid(),
  secret           text NOT NULL,
  previous_secret  text,
  previous_until   timestamptz,
  claimed_at       timestamptz NOT NULL DEFAULT now(),
  verified_at      timestamptz
);
CREATE INDEX processor_account_owners_workspace ON processor_account_owners (workspace_id);

-- Through which URL a refund or dispute came, kept while it waits for its payment so it is applied
-- under the same rule then: {"channel": "account", "workspace": <id>} for an account's own URL;
-- NULL for the operator's URL (every event stored before this migration came through it).
ALTER TABLE processor_events ADD COLUMN scope jsonb;

-- The rules that decide which workspace and program an event may act on are account_workspace,
-- account_programs and processor_event_program (functions/), which record_processor_payment uses.

-- Point 8. A test payment and a live one may carry the same processor ids (a payment intent, a
-- charge, a transaction id): each mode has its own ids here, its own waiting refunds, and a refund
-- or dispute reverses only the sale of its own mode. The ids recorded before this migration get the
-- mode of the payment events that recorded them (both when both modes did; live when none says).
ALTER TABLE processor_payment_refs DROP CONSTRAINT processor_payment_refs_pkey;
ALTER TABLE processor_payment_refs ADD COLUMN livemode boolean;
INSERT INTO processor_payment_refs (ref, transaction_id, livemode)
SELECT r.ref, r.transaction_id, false
  FROM processor_payment_refs r
  JOIN (SELECT transaction_id FROM processor_events WHERE NOT livemode AND transaction_id IS NOT NULL GROUP BY transaction_id) t
    USING (transaction_id);
DELETE FROM processor_payment_refs r
 USING (SELECT transaction_id, bool_or(livemode) AS live FROM processor_events WHERE transaction_id IS NOT NULL GROUP BY transaction_id) m
 WHERE r.livemode IS NULL AND m.transaction_id = r.transaction_id AND NOT m.live;
UPDATE processor_payment_refs SET livemode = true WHERE livemode IS NULL;
ALTER TABLE processor_payment_refs ALTER COLUMN livemode SET NOT NULL;
ALTER TABLE processor_payment_refs ADD PRIMARY KEY (ref, livemode);
-- record_processor_payment, refunded_sale, record_refund and record_partial_refund (functions/)
-- keep the modes apart.

-- The earlier forms of processor_event_program, connected_programs and refunded_sale: nothing calls
-- them any more. IF EXISTS: a database created from today's migrations never had them (functions/
-- is applied after every numbered migration).
DROP FUNCTION IF EXISTS processor_event_program(text, text);
DROP FUNCTION IF EXISTS connected_programs(text);
DROP FUNCTION IF EXISTS refunded_sale(bigint, text);
