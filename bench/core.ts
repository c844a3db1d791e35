import { cpuMs, startNode, freePort, waitForHttp, type Child } from './children.js'
import { runLoad, type LoadResult } from './loadgen.js'

/**
 * The core benchmark of issue 2: on the sim with zero latency, direct vs a bare @fastify/http-proxy
 * vs sluice (defaults: in-process limiter, request log on, metrics on), at 1 and 64 connections.
 * Each connection is its own instance, so no limit binds: this measures the proxy's own cost.
 * The targets take turns in ROUNDS rounds (medians reported), so the noise of a shared machine
 * hits each alike; the CPU time each proxy process spent per request is measured too.
 */
const ROUNDS = Number(process.env.SLUICE_BENCH_ROUNDS ?? 5)
const ROUND_MS = Number(process.env.SLUICE_BENCH_DURATION_MS ?? 2_000)
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`

export interface CoreRow {
  readonly target: string
  readonly connections: number
  /** medians over the rounds */
  readonly result: Pick<LoadResult, 'rps' | 'p50Ms' | 'p99Ms'> & { readonly failed: number }
  /** CPU µs the target's process spent per request (median over the rounds) */
  readonly cpuUsPerRequest: number
}

export async function runCoreBench(extraTargets: { name: string; env: Record<string, string> }[] = []): Promise<CoreRow[]> {
  const simPort = await freePort()
  const children: Child[] = []
  try {
    children.push(startNode(['dist/sim/main.js'], { SIM_PORT: String(simPort), SIM_HOST: '127.0.0.1', SIM_LATENCY_MS: '0' }))
    const sim = `http://127.0.0.1:${simPort}`
    await waitForHttp(`${sim}/__sim/stats`)

    const barePort = await freePort()
    children.push(startNode(['--import', 'tsx', 'bench/bare-proxy.ts'], { UPSTREAM: sim, PORT: String(barePort) }))
    const bare = `http://127.0.0.1:${barePort}`
    await waitForHttp(bare)

    const targets: { name: string; url: string; pid: number }[] = [
      { name: 'direct (sim)', url: sim, pid: children[0]!.process.pid! },
      { name: 'bare @fastify/http-proxy', url: bare, pid: children[1]!.process.pid! },
    ]
    for (const t of [{ name: 'sluice', env: {} }, ...extraTargets]) {
      const port = await freePort()
      const adminPort = await freePort()
      children.push(
        startNode(['dist/main.js'], {
          SLUICE_UPSTREAM: `${sim}/v2`,
          SLUICE_PORT: String(port),
          SLUICE_ADMIN_PORT: String(adminPort),
          SLUICE_HOST: '127.0.0.1',
          SLUICE_ADMIN_HOST: '127.0.0.1',
          ...t.env,
        }),
      )
      await waitForHttp(`http://127.0.0.1:${adminPort}/healthz`)
      targets.push({ name: t.name, url: `http://127.0.0.1:${port}`, pid: children[children.length - 1]!.process.pid! })
    }

    const rows: CoreRow[] = []
    for (const connections of [1, 64]) {
      const samples = targets.map(() => ({ rps: [] as number[], p50: [] as number[], p99: [] as number[], cpu: [] as number[], failed: 0 }))
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, target] of targets.entries()) {
          let cpuAtStart = 0
          let cpuUsed = 0
          const result = await runLoad({
            url: target.url,
            connections,
            durationMs: ROUND_MS,
            warmupMs: 300,
            path: (c) => `/v2/accounts/${1000 + c}/contacts`,
            headers: (c) => ({ authorization: basic(`org${c}`), 'neon-api-version': '2.12' }),
            onMeasure: (phase) => (phase === 'start' ? (cpuAtStart = cpuMs(target.pid)) : (cpuUsed = cpuMs(target.pid) - cpuAtStart)),
          })
          const s = samples[i]!
          s.rps.push(result.rps)
          s.p50.push(result.p50Ms)
          s.p99.push(result.p99Ms)
          s.cpu.push((cpuUsed * 1000) / result.requests)
          s.failed += result.errors + Object.entries(result.statuses).reduce((n, [code, count]) => n + (code === '200' ? 0 : count), 0)
        }
      }
      for (const [i, target] of targets.entries()) {
        const s = samples[i]!
        rows.push({
          target: target.name,
          connections,
          result: { rps: median(s.rps), p50Ms: median(s.p50), p99Ms: median(s.p99), failed: s.failed },
          cpuUsPerRequest: median(s.cpu),
        })
      }
    }
    return rows
  } finally {
    await Promise.all(children.map((c) => c.stop()))
  }
}

export function coreTable(rows: readonly CoreRow[]): string {
  const lines = [
    `| target | conns | req/s | p50 ms | p99 ms | non-200 | vs bare req/s | vs bare p50 | CPU µs / request |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const row of rows) {
    const bare = rows.find((r) => r.connections === row.connections && r.target.startsWith('bare'))?.result
    const ratio = bare ? `${((row.result.rps / bare.rps) * 100).toFixed(0)}%` : ''
    const dp50 = bare ? `${row.result.p50Ms - bare.p50Ms >= 0 ? '+' : ''}${(row.result.p50Ms - bare.p50Ms).toFixed(3)} ms` : ''
    lines.push(
      `| ${row.target} | ${row.connections} | ${row.result.rps.toFixed(0)} | ${row.result.p50Ms.toFixed(3)} | ${row.result.p99Ms.toFixed(3)} | ${row.result.failed} | ${ratio} | ${dp50} | ${row.cpuUsPerRequest.toFixed(0)} |`,
    )
  }
  return lines.join('\n')
}
