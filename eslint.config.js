import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Import boundaries: the design card's layers, top down. ingest/ (the HTTP app) may use the domain
 * and queries; the domain writes Postgres and the outbox; processors/ carry the event log to the
 * warehouse; queries/ read it; schemas/ and core/ stand on their own. In flat config a later block's
 * `no-restricted-imports` replaces an earlier one for the files both match, so each folder's whole
 * list of bans is written once, below.
 */
const layer = (name, message) => ({ regex: `(^|/)${name}/`, message });
const INGEST = layer('ingest', 'Only the HTTP app is in ingest/: return a typed outcome or throw a DomainError (domain/errors.ts); ingest/http/surfaces.ts turns it into the answer of each surface.');
const DOMAIN = layer('domain', 'The domain writes Postgres and the outbox; a stream processor, a query or a schema never calls it: take event types from schemas/event-contract.ts.');
const PROCESSORS = layer('processors', 'The stream processors are started by main.ts; nothing else imports them (a query only reads the warehouse).');
const QUERIES = layer('queries', 'queries/ is read by the HTTP app and the analysts, never by the domain, the processors, schemas or core.');
const NO_FASTIFY = { name: 'fastify', message: 'Only ingest/ knows HTTP.' };
const restrict = (patterns, paths = []) => ({ 'no-restricted-imports': ['error', { paths, patterns }] });

export default tseslint.config(
  // clients/browser/svc-tracker.js is built (npm run build:tracker) from clients/browser/src, which is linted.
  { ignores: ['node_modules', 'data', '**/dist', 'coverage', 'scratch', 'clients/browser/svc-tracker.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Config is the one place that reads the environment.
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read settings through core/config.ts' }],
    },
  },
  { files: ['core/config.ts', 'tests/**', 'bench/**', 'scripts/**', 'vitest.config.ts'], rules: { 'no-restricted-properties': 'off' } },
  // The svc command is its own program: environment.ts is its one reader of the environment.
  { files: ['clients/cli/src/environment.ts'], rules: { 'no-restricted-properties': 'off' } },
  // The domain says what happened or why something was refused; only ingest/ turns that into
  // statuses, envelopes and messages, so a webhook, the CLI or an agent reuses it.
  { files: ['domain/**'], rules: restrict([INGEST, PROCESSORS, QUERIES], [NO_FASTIFY]) },
  // The stream half stands without the HTTP app and the domain: a processor that imported them
  // would load Fastify and every write path.
  { files: ['processors/**'], rules: restrict([INGEST, DOMAIN, QUERIES], [NO_FASTIFY]) },
  { files: ['queries/**'], rules: restrict([INGEST, DOMAIN, PROCESSORS], [NO_FASTIFY]) },
  { files: ['schemas/**', 'core/**'], rules: restrict([INGEST, DOMAIN, PROCESSORS, QUERIES], [NO_FASTIFY]) },
  // Client packages are installed on their own by brands: they reach the service over HTTP only.
  {
    files: ['clients/**'],
    rules: restrict([{ regex: '^(\\.\\./)+(core|domain|ingest|processors|queries|schemas)/', message: 'A client package may not import the service: it is installed without it' }]),
  },
);
