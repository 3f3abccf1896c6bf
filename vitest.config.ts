import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each file builds its own databases; PGlite instances are heavy, so keep parallelism to the cores.
    maxWorkers: 2,
  },
});
