import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules', 'data', 'dist', 'coverage', 'scratch'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Config is the one place that reads the environment.
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read settings through core/config.ts' }],
    },
  },
  {
    // The stream half and the event contract stand without the HTTP app: events are defined in
    // schemas/event-contract.ts, and a pipeline that imported ingest/ would load Fastify and the domain.
    files: ['pipeline/**', 'queries/**', 'schemas/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)ingest/',
              message: 'pipeline/, queries/ and schemas/ do not depend on the HTTP app (ingest/): take event types from schemas/event-contract.ts.',
            },
          ],
        },
      ],
    },
  },
  { files: ['core/config.ts', 'tests/**', 'bench/**', 'scripts/**', 'vitest.config.ts'], rules: { 'no-restricted-properties': 'off' } },
  {
    // Import boundaries: the domain and the pipeline say what happened or why something was
    // refused; only ingest/http and ingest/routes turn that into statuses, envelopes and messages,
    // so a webhook, the CLI or the pipeline reuses the domain without the sale endpoint's answers.
    // (`../http/` is the HTTP layer as seen from ingest/domain.)
    files: ['ingest/domain/**', 'pipeline/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'fastify', message: 'The domain and the pipeline know nothing of HTTP.' }],
          patterns: [
            {
              regex: '(^|/)ingest/(http|routes)(/|$)|^\\.\\./(http|routes)(/|$)',
              message:
                'The domain and the pipeline never import the HTTP layer: return a typed outcome or throw a DomainError ' +
                '(ingest/domain/errors.ts); ingest/http/surfaces.ts turns it into the answer of each surface.',
            },
          ],
        },
      ],
    },
  },
);
