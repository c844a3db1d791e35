import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ first: tests that start processes run it (test/support/build.ts).
    globalSetup: ['test/support/build.ts'],
    // Tests start real servers (sims, redis-server, proxy replicas): give them room on a 2-core box.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
})
