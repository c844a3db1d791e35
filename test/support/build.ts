import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/**
 * vitest globalSetup: builds src/ → dist/ before any test runs, because the tests that start
 * processes (a proxy replica, the demo, `npm run versions`) run dist/. So `npx vitest` right after
 * editing src/ tests the edit, not the last build. Incremental (dist/.tsbuildinfo): a few seconds
 * when little changed. A type error stops the run here, with tsc's message.
 */
export default function buildDist(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url))
  execFileSync(
    process.execPath,
    [fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url)), '-p', 'tsconfig.build.json'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  )
  execFileSync(process.execPath, [fileURLToPath(new URL('../../scripts/copy-assets.mjs', import.meta.url))], {
    cwd: root,
    stdio: 'inherit',
  })
}
