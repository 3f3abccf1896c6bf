import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // A Kafka container where Docker exists and no broker is given (see the file).
    globalSetup: ['tests/support/kafka-container.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each file builds its own databases; PGlite instances are heavy, so keep parallelism to the cores.
    maxWorkers: 2,
  },
});
