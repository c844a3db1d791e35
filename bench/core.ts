import { startNode, freePort, waitForHttp, type Child } from './children.js'
import { runLoad, type LoadResult } from './loadgen.js'

/**
 * The core benchmark of issue 2: on the sim with zero latency, direct vs a bare @fastify/http-proxy
 * vs sluice (defaults: in-process limiter, request log on, metrics on), at 1 and 64 connections.
 * Each connection is its own instance, so no limit binds: this measures the proxy's own cost.
 */
const DURATION_MS = Number(process.env.SLUICE_BENCH_DURATION_MS ?? 5_000)
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`

export interface CoreRow {
  readonly target: string
  readonly connections: number
  readonly result: LoadResult
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

    const targets: { name: string; url: string }[] = [
      { name: 'direct (sim)', url: sim },
      { name: 'bare @fastify/http-proxy', url: bare },
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
      targets.push({ name: t.name, url: `http://127.0.0.1:${port}` })
    }

    const rows: CoreRow[] = []
    for (const connections of [1, 64]) {
      for (const target of targets) {
        const result = await runLoad({
          url: target.url,
          connections,
          durationMs: DURATION_MS,
          path: (i) => `/v2/accounts/${1000 + i}/contacts`,
          headers: (i) => ({ authorization: basic(`org${i}`), 'neon-api-version': '2.12' }),
        })
        rows.push({ target: target.name, connections, result })
      }
    }
    return rows
  } finally {
    await Promise.all(children.map((c) => c.stop()))
  }
}

export function coreTable(rows: readonly CoreRow[]): string {
  const lines = [
    '| target | conns | req/s | p50 ms | p99 ms | non-200 | vs bare req/s | vs bare p50 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const row of rows) {
    const bare = rows.find((r) => r.connections === row.connections && r.target.startsWith('bare'))?.result
    const non200 = Object.entries(row.result.statuses)
      .filter(([s]) => s !== '200')
      .reduce((n, [, c]) => n + c, 0) + row.result.errors
    const ratio = bare ? `${((row.result.rps / bare.rps) * 100).toFixed(0)}%` : ''
    const dp50 = bare ? `${row.result.p50Ms - bare.p50Ms >= 0 ? '+' : ''}${(row.result.p50Ms - bare.p50Ms).toFixed(3)} ms` : ''
    lines.push(
      `| ${row.target} | ${row.connections} | ${row.result.rps.toFixed(0)} | ${row.result.p50Ms.toFixed(3)} | ${row.result.p99Ms.toFixed(3)} | ${non200} | ${ratio} | ${dp50} |`,
    )
  }
  return lines.join('\n')
}
