/**
 * `npm run bench -- memory`: what the memory budget holds against what the process really keeps
 * resident (docs/deploy.md, "Memory: a budget"). A real proxy process (dist/main.js) with a budget, the worst
 * case the docs name: requests queued with 1 MiB bodies kept whole (the default retry.maxBufferBytes),
 * sent until the budget refuses; the resident peak is read from /proc (VmHWM).
 */
import type { ServerResponse } from 'node:http'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { MemoryBudget } from '../src/budget/budget.js'
import { holdRequest } from '../src/proxy/memory-hold.js'
import type { Tracked } from '../src/proxy/tracking.js'
import { OpenRequests } from '../src/proxy/open-requests.js'
import { startSim } from '../src/sim/index.js'
import { rssOf, spawnProxy } from '../test/support/process.js'

const MiB = 1024 * 1024
const BODY = Buffer.alloc(MiB, 'x')

const hwmOf = (pid: number): number =>
  Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024

function post(url: string, org: string, hold: string): Promise<number> {
  const u = new URL(url)
  return new Promise((resolve) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method: 'POST',
        path: '/v2/accounts/search',
        agent: false,
        headers: {
          authorization: `Basic ${Buffer.from(`${org}:k`).toString('base64')}`,
          'content-length': String(BODY.length),
          'x-sim-hold': hold,
        },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', () => resolve(0))
    req.end(BODY)
  })
}

async function scrape(adminUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text()
  const figures = new Map<string, number>()
  for (const line of text.split('\n'))
    if (line.startsWith('sluice_memory_budget')) figures.set(line.split(' ')[0]!, Number(line.split(' ')[1]))
  return figures
}

/** One run of the table: a budget, and the Redis URL when the Redis limiter is measured. */
export interface BudgetRun {
  readonly budget: number
  readonly redisUrl?: string
}

export async function runMemoryBudgetBench(runs: readonly BudgetRun[]): Promise<string> {
  const rows = [
    '| budget | limiter | RSS idle | held in the budget at the peak | requests held / refused | RSS peak (VmHWM) | RSS peak − idle | (peak − idle) ÷ held |',
    '|---|---|---|---|---|---|---|---|',
  ]
  for (const { budget, redisUrl } of runs) {
    const sim = await startSim({})
    const proxy = await spawnProxy({
      SLUICE_UPSTREAM: sim.apiUrl,
      SLUICE_MEMORY_BUDGET_BYTES: String(budget),
      SLUICE_QUEUE_MAX_LENGTH: '100000',
      SLUICE_QUEUE_MAX_WAIT_MS: '600000',
      SLUICE_REQUEST_LOG: 'false',
      ...(redisUrl === undefined
        ? {}
        : { SLUICE_REDIS_URL: redisUrl, SLUICE_REDIS_KEY_PREFIX: `bench-budget-${budget}` }),
    })
    try {
      await new Promise((r) => setTimeout(r, 1_000))
      const idle = rssOf(proxy.pid) ?? 0
      const answers: Promise<number>[] = []
      let refused = 0
      // 8 at a time over 16 organisations (each a key at limit 1: one upstream, the rest queued) until 16 refusals
      for (let i = 0; refused < 16 && i < 2_000; i += 8) {
        for (let j = 0; j < 8; j++)
          answers.push(post(proxy.url, `org${(i + j) % 16}`, 'bench').then((s) => (s === 503 && refused++, s)))
        await new Promise((r) => setTimeout(r, 200))
      }
      await new Promise((r) => setTimeout(r, 500))
      const figures = await scrape(proxy.adminUrl)
      const held = [...figures]
        .filter(([k]) => k.startsWith('sluice_memory_budget_used_bytes'))
        .reduce((a, [, v]) => a + v, 0)
      const peak = hwmOf(proxy.pid)
      const heldRequests = figures.get('sluice_memory_budget_used_bytes{kind="request"}')! / (16 * 1024)
      sim.open('bench')
      await Promise.all(answers)
      rows.push(
        `| ${budget / MiB} MiB | ${redisUrl === undefined ? 'in-process' : 'Redis'} | ${(idle / MiB).toFixed(0)} MiB | ${(held / MiB).toFixed(1)} MiB | ${heldRequests} / ${refused} | ${(peak / MiB).toFixed(0)} MiB | ${((peak - idle) / MiB).toFixed(0)} MiB | ${((peak - idle) / held).toFixed(2)} |`,
      )
    } finally {
      await proxy.stop('SIGKILL')
      await sim.close()
    }
  }
  return rows.join('\n')
}

/** What holding a request in the budget costs: holdRequest and the release at its response's close, ns (median of 5 rounds of 10^6). */
export function holdCostNs(): { noBody: number; body: number } {
  const budget = new MemoryBudget(Infinity)
  const N = 1_000_000
  const res = { closed: false } as ServerResponse
  const run = (hasBody: boolean | undefined): number => {
    const t = process.hrtime.bigint()
    for (let i = 0; i < N; i++) {
      const tracked = {} as Tracked
      if (hasBody === undefined) continue
      holdRequest(budget, tracked, res, hasBody, hasBody ? 1_000 : undefined, MiB)
      tracked.held?.release()
      tracked.heldBody?.release()
    }
    return Number(process.hrtime.bigint() - t) / N
  }
  const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const noBody: number[] = []
  const body: number[] = []
  for (let round = 0; round < 5; round++) {
    const base = run(undefined)
    noBody.push(run(false) - base)
    body.push(run(true) - base)
  }
  return { noBody: median(noBody), body: median(body) }
}

/** What the drain's list of open requests costs a request (added, then removed), beside a Set of them, ns (median of 5 rounds of 10^6). */
export function openCostNs(): { list: number; set: number } {
  const N = 1_000_000
  const open = new OpenRequests()
  const set = new Set<object>()
  const run = (what: 'none' | 'list' | 'set'): number => {
    const t = process.hrtime.bigint()
    for (let i = 0; i < N; i++) {
      // a new object each time, as each request's response is: a Set hashes it on first use
      const res = { i } as unknown as ServerResponse
      if (what === 'list') open.removed(open.added(res))
      else if (what === 'set') set.delete(set.add(res) && res)
    }
    return Number(process.hrtime.bigint() - t) / N
  }
  const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const list: number[] = []
  const sets: number[] = []
  for (let round = 0; round < 5; round++) {
    const base = run('none')
    list.push(run('list') - base)
    sets.push(run('set') - base)
  }
  return { list: median(list), set: median(sets) }
}
