import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { expect, test } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const BENCH = join(ROOT, 'bench')

/** Every test/support module a benchmark file imports, as absolute .ts paths. */
function supportModulesOfBench(): string[] {
  const found = new Set<string>()
  const files = readdirSync(BENCH, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))
  for (const file of files) {
    const path = join(BENCH, file)
    for (const m of readFileSync(path, 'utf8').matchAll(/from '((?:\.\.\/)+test\/support\/[^']+)\.js'/g)) {
      found.add(`${resolve(dirname(path), m[1]!)}.ts`)
    }
  }
  return [...found].sort()
}

// `npm run bench` runs with plain node: a test helper that imports vitest there breaks the benchmark.
test('the test helpers the benchmarks use load without vitest', () => {
  const modules = supportModulesOfBench()
  expect(modules.length).toBeGreaterThan(0)
  const script = modules.map((m) => `await import(${JSON.stringify(pathToFileURL(m).href)})`).join('\n')
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 30_000,
  })
  expect(run.stderr).toBe('')
  expect(run.status).toBe(0)
}, 40_000)
