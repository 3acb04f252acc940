import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Engine tests share one PostgreSQL; each file uses its own schema, so files may run in parallel.
    pool: 'forks',
    maxWorkers: 2,
  },
});
