import { pino, type Logger } from 'pino';

/** Names whose values are secrets wherever they appear (top level, or one or two levels down). */
const SECRET_NAMES = [
  'authorization',
  'Authorization',
  'apiKey',
  'api_key',
  'token',
  'dashboardToken',
  'agentKey',
  'id_token',
  'access_token',
  'refresh_token',
  'client_secret',
  'password',
  'secret',
  'webhookSecret',
  'webhook_secret',
  'processorWebhookSecret',
  '["stripe-signature"]',
  '["Stripe-Signature"]',
];

const member = (name: string) => (name.startsWith('[') ? name : `.${name}`);

/**
 * Secrets never reach the logs, whatever a caller passes to a log line: by name at up to three
 * levels (so `err.config.headers.authorization` of an HTTP client's error, `kafka.sasl.password`),
 * plus the header objects of requests and errors (`req.headers`, `err.request.headers`).
 */
const REDACTED_PATHS = [
  'req.headers.cookie',
  ...SECRET_NAMES.flatMap((name) => [
    name.startsWith('[') ? `headers${name}` : name,
    `*${member(name)}`,
    `*.*${member(name)}`,
    `*.*.*${member(name)}`,
  ]),
];

const CENSOR = '[redacted]';

/**
 * What paths cannot reach, in the written line itself: the password of a connection URL
 * (postgres://user:pw@, redis://:pw@, kafka, ClickHouse) in any string, error messages and stacks
 * included; a Bearer token inside a string (a raw request header); and our own key formats.
 */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:@/"\\]*):[^\s@/"\\]+@/gi;
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]+/g;
// ppl_ and pps_: the partner portal's sign-in links (in a URL's query) and sessions (issue 31).
const OWN_SECRET = /\b(aff|dsh|agt|slt|whsec|ppl|pps)_[A-Za-z0-9_-]{16,}/g;

function redactLine(line: string): string {
  return line.replace(URL_PASSWORD, `$1:${CENSOR}@`).replace(BEARER, `$1${CENSOR}`).replace(OWN_SECRET, `$1_${CENSOR}`);
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACTED_PATHS, censor: CENSOR }, hooks: { streamWrite: redactLine } }, destination);
}
