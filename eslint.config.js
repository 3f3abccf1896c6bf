import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules', 'data', '**/dist', 'coverage', 'scratch'] },
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
  {
    // Client packages are installed on their own by brands: they reach the service over HTTP only.
    files: ['clients/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^(\\.\\./)+(core|ingest|pipeline|queries|schemas)/', message: 'A client package may not import the service: it is installed without it' }] }],
    },
  },
);
