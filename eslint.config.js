import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Import boundaries. In flat config a later block's `no-restricted-imports` replaces an earlier
 * one for the files both match, so each folder's whole list of bans is written once, below.
 */
const HTTP_LAYER = {
  regex: '(^|/)ingest/(http|routes)(/|$)|^\\.\\./(http|routes)(/|$)',
  message:
    'The domain and the pipeline never import the HTTP layer: return a typed outcome or throw a DomainError ' +
    '(ingest/domain/errors.ts); ingest/http/surfaces.ts turns it into the answer of each surface.',
};
const INGEST = {
  regex: '(^|/)ingest/',
  message: 'pipeline/, queries/ and schemas/ do not depend on the HTTP app (ingest/): take event types from schemas/event-contract.ts.',
};
const NO_FASTIFY = { name: 'fastify', message: 'The domain and the pipeline know nothing of HTTP.' };
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
  // The domain says what happened or why something was refused; only ingest/http and ingest/routes
  // turn that into statuses, envelopes and messages, so a webhook, the CLI or an agent reuses it.
  { files: ['ingest/domain/**'], rules: restrict([HTTP_LAYER], [NO_FASTIFY]) },
  // The stream half and the event contract stand without the HTTP app: a pipeline that imported
  // ingest/ would load Fastify and the domain.
  { files: ['pipeline/**'], rules: restrict([INGEST, HTTP_LAYER], [NO_FASTIFY]) },
  { files: ['queries/**', 'schemas/**'], rules: restrict([INGEST]) },
  // Client packages are installed on their own by brands: they reach the service over HTTP only.
  {
    files: ['clients/**'],
    rules: restrict([{ regex: '^(\\.\\./)+(core|ingest|pipeline|queries|schemas)/', message: 'A client package may not import the service: it is installed without it' }]),
  },
);
