/**
 * A program's outgoing webhook endpoints (issue 32, point 1; partner-program.md, "Outgoing
 * webhooks"): several per program, each with its URL and its event filter. The signing secret
 * (`whsec_`, Standard Webhooks' form) is returned once, at creation and at each rotation, and kept
 * sealed with SECRETS_KEY (core/secret-box.ts), bound to its endpoint; after a rotation the previous
 * secret keeps signing beside the new one for 24 hours.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { sql, type Database, type Queryable } from '../../core/db.js';
import type { SecretBox } from '../../core/secret-box.js';
import { recordAudit, type AuditContext } from '../audit/audit.js';
import { endpointSecretContext, TEST_PING_TYPE, type WebhookBody, type WebhookEventType } from '../../schemas/webhooks.js';
import { refused } from '../errors.js';
import { checkEndpointUrl, type UrlPolicy } from './urls.js';

/** How long the previous secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_HOURS = 24;

const VIEW = `id, url, description, events, status, disabled_reason, disabled_at, failing_since,
  CASE WHEN previous_until > now() THEN previous_until END AS previous_secret_until, created_at, updated_at`;

const q = {
  insert: sql(
    'webhook_endpoints.insert',
    `INSERT INTO webhook_endpoints (id, program_id, url, description, events, secret) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${VIEW}`,
  ),
  list: sql('webhook_endpoints.list', `SELECT ${VIEW} FROM webhook_endpoints WHERE program_id = $1 ORDER BY created_at, id`),
  get: sql('webhook_endpoints.get', `SELECT ${VIEW} FROM webhook_endpoints WHERE program_id = $1 AND id = $2`),
  // The state before a change, for its audit entry; locked so it is the state the change replaced.
  lock: sql('webhook_endpoints.lock', `SELECT ${VIEW} FROM webhook_endpoints WHERE program_id = $1 AND id = $2 FOR UPDATE`),
  update: sql(
    'webhook_endpoints.update',
    `UPDATE webhook_endpoints SET
       url = coalesce($3, url),
       events = coalesce($4, events),
       description = CASE WHEN $5::boolean THEN $6 ELSE description END,
       status = CASE $7::boolean WHEN true THEN 'enabled' WHEN false THEN 'disabled' ELSE status END,
       disabled_reason = CASE $7::boolean WHEN true THEN NULL WHEN false THEN coalesce(disabled_reason, 'manual') ELSE disabled_reason END,
       disabled_at = CASE $7::boolean WHEN true THEN NULL WHEN false THEN coalesce(disabled_at, now()) ELSE disabled_at END,
       failing_since = CASE WHEN $7::boolean THEN NULL ELSE failing_since END,
       updated_at = now()
     WHERE program_id = $1 AND id = $2 RETURNING ${VIEW}`,
  ),
  failPending: sql(
    'webhook_endpoints.fail_pending',
    `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL WHERE endpoint_id = $1 AND status = 'pending'`,
  ),
  remove: sql('webhook_endpoints.delete', `DELETE FROM webhook_endpoints WHERE program_id = $1 AND id = $2 RETURNING ${VIEW}`),
  rotate: sql(
    'webhook_endpoints.rotate',
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_until = $3, secret = $4, updated_at = now()
      WHERE program_id = $1 AND id = $2 RETURNING ${VIEW}`,
  ),
  pingEvent: sql('webhook_events.insert_ping', `INSERT INTO webhook_events (event_id, program_id, type, body) VALUES ($1, $2, $3, $4)`),
  pingDelivery: sql(
    'webhook_deliveries.insert_ping',
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, program_id, event_type, next_attempt_at)
     VALUES ($1, $2, $3, $4, now()) RETURNING id`,
  ),
  health: sql(
    'webhook_endpoints.health',
    `SELECT count(*)::int AS endpoints,
            count(*) FILTER (WHERE status = 'enabled')::int AS enabled,
            count(*) FILTER (WHERE status = 'disabled' AND disabled_reason = 'failing')::int AS disabled_failing,
            count(*) FILTER (WHERE status = 'disabled' AND disabled_reason = 'manual')::int AS disabled_manual,
            count(*) FILTER (WHERE status = 'enabled' AND failing_since IS NOT NULL)::int AS failing
       FROM webhook_endpoints WHERE program_id = $1`,
  ),
};

export interface EndpointView {
  id: string;
  url: string;
  description: string | null;
  events: WebhookEventType[];
  status: 'enabled' | 'disabled';
  disabled_reason: 'failing' | 'manual' | null;
  disabled_at: Date | null;
  failing_since: Date | null;
  /** While a rotation's previous secret still signs. */
  previous_secret_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * A secret in Standard Webhooks' form: `whsec_` and the base64 of 33 random bytes, drawn again until
 * the text has no `+` or `/` (about one draw in four keeps it), so the log redaction of `whsec_`
 * values (core/log.ts) covers all of it.
 */
export function newSecret(): string {
  for (;;) {
    const text = randomBytes(33).toString('base64');
    if (/^[A-Za-z0-9]+$/.test(text)) return `whsec_${text}`;
  }
}

export interface EndpointInput {
  url: string;
  events: WebhookEventType[];
  description: string | null;
}

const target = (id: string) => ({ type: 'webhook_endpoint', id });

/** The new endpoint and its secret (shown this once; its audit entry holds the endpoint without it). */
export async function createEndpoint(db: Database, box: SecretBox, policy: UrlPolicy, programId: number, input: EndpointInput, by: AuditContext) {
  await checkEndpointUrl(input.url, policy);
  const id = randomUUID();
  const secret = newSecret();
  return db.transaction(async (tx) => {
    const endpoint = (await tx.one<EndpointView>(q.insert, [id, programId, input.url, input.description, input.events, box.seal(secret, endpointSecretContext(id))]))!;
    await recordAudit(tx, by, { action: 'webhook_endpoint.created', programId, target: target(id), before: null, after: endpoint });
    return { endpoint, secret };
  });
}

export const listEndpoints = (db: Queryable, programId: number) => db.many<EndpointView>(q.list, [programId]);

export async function getEndpoint(db: Queryable, programId: number, endpointId: string): Promise<EndpointView> {
  const endpoint = await db.one<EndpointView>(q.get, [programId, endpointId]);
  if (!endpoint) throw refused({ reason: 'webhook_endpoint_not_found' });
  return endpoint;
}

export interface EndpointChanges {
  url?: string;
  events?: WebhookEventType[];
  /** undefined: unchanged; null: removed. */
  description?: string | null;
  enabled?: boolean;
}

/** Disabling (by hand) fails what the endpoint still had pending; enabling starts its health afresh. */
export async function updateEndpoint(db: Database, policy: UrlPolicy, programId: number, endpointId: string, changes: EndpointChanges, by: AuditContext): Promise<EndpointView> {
  if (changes.url !== undefined) await checkEndpointUrl(changes.url, policy);
  return db.transaction(async (tx) => {
    const before = await tx.one<EndpointView>(q.lock, [programId, endpointId]);
    if (!before) throw refused({ reason: 'webhook_endpoint_not_found' });
    const endpoint = await tx.one<EndpointView>(q.update, [
      programId,
      endpointId,
      changes.url ?? null,
      changes.events ?? null,
      changes.description !== undefined,
      changes.description ?? null,
      changes.enabled ?? null,
    ]);
    if (!endpoint) throw refused({ reason: 'webhook_endpoint_not_found' });
    if (changes.enabled === false) await tx.many(q.failPending, [endpointId]);
    await recordAudit(tx, by, { action: 'webhook_endpoint.updated', programId, target: target(endpointId), before, after: endpoint });
    return endpoint;
  });
}

/** Its deliveries and their attempts go with it. */
export async function deleteEndpoint(db: Database, programId: number, endpointId: string, by: AuditContext): Promise<void> {
  await db.transaction(async (tx) => {
    const before = await tx.one<EndpointView>(q.remove, [programId, endpointId]);
    if (!before) throw refused({ reason: 'webhook_endpoint_not_found' });
    await recordAudit(tx, by, { action: 'webhook_endpoint.deleted', programId, target: target(endpointId), before, after: null });
  });
}

/** A new secret, returned this once; the previous one signs beside it until `previousUntil`. The audit entry shows when, never a secret. */
export async function rotateSecret(db: Database, box: SecretBox, programId: number, endpointId: string, previousUntil: Date, by: AuditContext) {
  const secret = newSecret();
  return db.transaction(async (tx) => {
    const before = await tx.one<EndpointView>(q.lock, [programId, endpointId]);
    if (!before) throw refused({ reason: 'webhook_endpoint_not_found' });
    const endpoint = (await tx.one<EndpointView>(q.rotate, [programId, endpointId, previousUntil, box.seal(secret, endpointSecretContext(endpointId))]))!;
    await recordAudit(tx, by, { action: 'webhook_endpoint.secret_rotated', programId, target: target(endpointId), before, after: endpoint });
    return { endpoint, secret };
  });
}

/**
 * A test ping for one endpoint, whatever its filter, delivered by the worker like any event (signed,
 * retried, logged). Returns its delivery and event ids.
 */
export async function sendTestPing(db: Database, programId: number, endpointId: string, now: Date, by: AuditContext): Promise<{ deliveryId: string; eventId: string }> {
  const endpoint = await getEndpoint(db, programId, endpointId);
  if (endpoint.status !== 'enabled') throw refused({ reason: 'webhook_endpoint_disabled' });
  const eventId = randomUUID();
  const body: WebhookBody = { type: TEST_PING_TYPE, id: eventId, created_at: now.toISOString(), program_id: programId, data: { endpoint_id: endpointId } };
  return db.transaction(async (tx) => {
    await tx.many(q.pingEvent, [eventId, programId, TEST_PING_TYPE, JSON.stringify(body)]);
    const row = (await tx.one<{ id: string }>(q.pingDelivery, [endpointId, eventId, programId, TEST_PING_TYPE]))!;
    await recordAudit(tx, by, { action: 'webhook_endpoint.tested', programId, target: target(endpointId), before: null, after: { delivery_id: row.id, event_id: eventId } });
    return { deliveryId: row.id, eventId };
  });
}

export interface WebhookHealth {
  endpoints: number;
  enabled: number;
  /** Disabled by the service after failing for 5 days. */
  disabled_failing: number;
  disabled_manual: number;
  /** Enabled, but its last attempts failed. */
  failing: number;
}

/** The program's endpoints at a glance, for its status. */
export async function webhookHealth(db: Queryable, programId: number): Promise<WebhookHealth> {
  return (await db.one<WebhookHealth>(q.health, [programId]))!;
}
