import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ first: tests that start processes run it (test/support/build.ts). Then, with no
    // redis-server on PATH and no SLUICE_TEST_REDIS_URL, a Redis container (test/support/redis-container.ts).
    globalSetup: ['test/support/build.ts', 'test/support/redis-container.ts'],
    // After the default report, the skipped tests by the tool they need and what brings it; with
    // SLUICE_TEST_REQUIRE_TOOLS=1 (.ci/run) such a skip fails the run (test/support/skip-summary.ts).
    reporters: ['default', './test/support/skip-summary.ts'],
    // Tests start real servers (sims, redis-server, proxy replicas): give them room on a 2-core box.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
})
