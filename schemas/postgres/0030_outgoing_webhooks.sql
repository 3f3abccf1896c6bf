-- Issue 32: outgoing webhooks (partner-program.md, "Outgoing webhooks"). A brand's endpoints per
-- program, the events the dispatcher (processors/webhooks/) built from the event log, one delivery
-- per endpoint and event, and the log of every attempt. docs/decisions/outgoing-webhooks.md.

-- id: made before the insert (domain/webhooks/endpoints.ts), because the sealed secret is bound to it.
-- events: the endpoint's filter, webhook event types (schemas/webhooks.ts).
-- secret, previous_secret: sealed with SECRETS_KEY (core/secret-box.ts), never stored in clear; the
-- previous one keeps signing beside the new one until previous_until after a rotation.
-- failing_since: the first failed attempt since the last success; past 5 days the endpoint is
-- disabled (disabled_reason 'failing'), or a brand disables it by hand ('manual').
CREATE TABLE webhook_endpoints (
  id               uuid PRIMARY KEY,
  program_id       bigint NOT NULL REFERENCES programs (id) ON DELETE CASCADE,
  url              text NOT NULL,
  description      text,
  events           text[] NOT NULL,
  secret           text NOT NULL,
  previous_secret  text,
  previous_until   timestamptz,
  status           text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  disabled_reason  text CHECK (disabled_reason IN ('failing', 'manual')),
  disabled_at      timestamptz,
  failing_since    timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CHECK ((status = 'disabled') = (disabled_reason IS NOT NULL))
);
CREATE INDEX webhook_endpoints_program ON webhook_endpoints (program_id, created_at);

-- An event as delivered: event_id is the internal event's id (the webhook-id header), body the exact
-- JSON text that is signed and sent on every attempt.
CREATE TABLE webhook_events (
  event_id    uuid PRIMARY KEY,
  program_id  bigint NOT NULL,
  type        text NOT NULL,
  body        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_events_created ON webhook_events (created_at);

-- One per endpoint and event (the dispatcher's idempotency). pending until a 2xx (delivered) or the
-- end of its retry window (failed). next_attempt_at: when it is due; a worker that takes it moves it
-- past the attempt's timeout (its lease), so a worker killed mid-attempt leaves it due again.
-- retries: attempts since window_start, the index into the backoff schedule; a redelivery starts a
-- new window.
CREATE TABLE webhook_deliveries (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  endpoint_id      uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id         uuid NOT NULL REFERENCES webhook_events (event_id) ON DELETE CASCADE,
  program_id       bigint NOT NULL,
  event_type       text NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  retries          integer NOT NULL DEFAULT 0,
  window_start     timestamptz NOT NULL DEFAULT now(),
  next_attempt_at  timestamptz,
  last_attempt_at  timestamptz,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, event_id),
  CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint_page ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- The delivery log: every attempt, with the receiver's status code (NULL when none came), how long
-- it took, the start of its response body (truncated) or why no response came.
CREATE TABLE webhook_attempts (
  id             bigserial PRIMARY KEY,
  delivery_id    uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  endpoint_id    uuid NOT NULL,
  attempted_at   timestamptz NOT NULL,
  status_code    integer,
  duration_ms    integer NOT NULL,
  response_body  text,
  error          text
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
