import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { containerMemoryLimit } from '../../src/budget/limit.js'
import { spawnProxy, type ProxyProcess } from '../support/process.js'
import { REPO } from './chart.js'

/**
 * `npm start` bounds V8's heap unless NODE_OPTIONS says otherwise (docs/deploy.md, "Without a memory
 * limit"), and the memory budget follows that bound.
 */

const MiB = 1024 * 1024
const startScript = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: { start: string } })
  .scripts.start
/** npm start's default NODE_OPTIONS, in `NODE_OPTIONS=${NODE_OPTIONS:-…}` */
const startDefault = /NODE_OPTIONS=\$\{NODE_OPTIONS:-([^}]*)\}/.exec(startScript)?.[1]

let proxy: ProxyProcess | undefined
afterEach(async () => {
  await proxy?.stop()
  proxy = undefined
})

/** `npm start`'s script under sh, as npm runs it; the test's own node first on PATH */
async function npmStart(env: Record<string, string>): Promise<Record<string, unknown>> {
  proxy = await spawnProxy(
    {
      PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      SLUICE_UPSTREAM: 'http://127.0.0.1:9/v2',
      SLUICE_REQUEST_LOG: 'false',
      ...env,
    },
    15_000,
    { file: 'sh', args: ['-c', startScript], cwd: REPO },
  )
  const line = proxy
    .output()
    .split('\n')
    .find((l) => l.includes('"sluice listening"'))!
  return JSON.parse(line) as Record<string, unknown>
}

describe('the heap bound sluice starts with', () => {
  it('npm start bounds the old space at 512 MiB without NODE_OPTIONS, node in place of the shell, and the budget follows the bound', async () => {
    expect(startDefault).toBe('--max-old-space-size=512')
    const started = await npmStart({})
    // `exec`: the shell became node, so signals reach sluice itself (review8-npm-start-signals.test.ts)
    expect(readFileSync(`/proc/${proxy!.pid}/comm`, 'utf8').trim()).toBe('node')
    const bound = started.heapBoundBytes as number
    expect(bound / MiB).toBeGreaterThanOrEqual(512)
    expect(bound / MiB).toBeLessThan(640) // and the young generation
    const budget = started.memoryBudgetBytes as number
    const limit = containerMemoryLimit() // this machine's, if any, read as sluice reads it
    if (limit === undefined) expect(budget).toBe(Math.floor(bound / 2))
    else expect(budget).toBe(Math.min(Math.floor((limit - 160 * MiB) / 2), bound - 80 * MiB))
  })

  it("a NODE_OPTIONS given replaces npm start's default", async () => {
    const started = await npmStart({ NODE_OPTIONS: '--max-old-space-size=300' })
    const bound = started.heapBoundBytes as number
    expect(bound / MiB).toBeGreaterThanOrEqual(300)
    expect(bound / MiB).toBeLessThan(400)
  })

  it("an empty NODE_OPTIONS is none: npm start's default applies (sh's `:-`)", async () => {
    const started = await npmStart({ NODE_OPTIONS: '' })
    expect((started.heapBoundBytes as number) / MiB).toBeGreaterThanOrEqual(512)
  })
})
