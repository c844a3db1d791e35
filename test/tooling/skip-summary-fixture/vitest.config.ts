import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

// A run of the fixture tests beside this file, reported by the real skip summary (test/tooling/skip-summary.test.ts).
const here = (path: string): string => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  test: {
    root: here('.'),
    include: [process.env.SKIP_FIXTURE === 'not-here' ? 'not-here.fixture.ts' : 'needs-tools.fixture.ts'],
    reporters: ['default', here('../../support/skip-summary.ts')],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 1, minForks: 1 } },
  },
})
