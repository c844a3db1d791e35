import { freePort, startNode, startSimChild, startSluiceChild, waitForHttp, type Child } from './children.js'
import { measureInTurns, type TurnFigures, type TurnTarget } from './turns.js'

/**
 * The core benchmark: on the sim with zero latency, direct vs a bare @fastify/http-proxy
 * vs sluice (defaults: in-process limiter, request log on, metrics on), at 1 and 64 connections.
 * Each connection is its own instance, so no limit binds: this measures the proxy's own cost.
 * The targets take turns in ROUNDS short rounds; each figure is the median over the rounds, and
 * each comparison with the bare proxy is the median of the round-by-round comparisons.
 */
export const ROUNDS = Number(process.env.SLUICE_BENCH_ROUNDS ?? 30)
export const ROUND_MS = Number(process.env.SLUICE_BENCH_DURATION_MS ?? 500)

export interface CoreRow {
  readonly target: string
  readonly connections: number
  readonly figures: TurnFigures
}

export async function runCoreBench(
  extraTargets: { name: string; env: Record<string, string> }[] = [],
): Promise<CoreRow[]> {
  const children: Child[] = []
  try {
    const sim = await startSimChild()
    children.push(sim)
    const barePort = await freePort()
    const bare = startNode(['--import', 'tsx', 'bench/bare-proxy.ts'], { UPSTREAM: sim.url, PORT: String(barePort) })
    children.push(bare)
    await waitForHttp(`http://127.0.0.1:${barePort}`)

    const targets: TurnTarget[] = [
      { name: 'direct (sim)', url: sim.url, pid: sim.pid },
      { name: 'bare @fastify/http-proxy', url: `http://127.0.0.1:${barePort}`, pid: bare.process.pid! },
    ]
    for (const t of [{ name: 'sluice', env: {} }, ...extraTargets]) {
      const sluice = await startSluiceChild(`${sim.url}/v2`, t.env)
      children.push(sluice)
      targets.push({ name: t.name, url: sluice.url, pid: sluice.pid })
    }

    const rows: CoreRow[] = []
    for (const connections of [1, 64]) {
      const figures = await measureInTurns(targets, { connections, rounds: ROUNDS, roundMs: ROUND_MS, baseline: 1 })
      for (const [i, target] of targets.entries()) rows.push({ target: target.name, connections, figures: figures[i]! })
    }
    return rows
  } finally {
    await Promise.all(children.map((c) => c.stop()))
  }
}

export function coreTable(rows: readonly CoreRow[]): string {
  const lines = [
    `| target | conns | req/s | p50 ms | p99 ms | non-200 | CPU µs / request | vs bare: req/s | vs bare: p50 | vs bare: CPU / request |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const { target, connections, figures: f } of rows) {
    const v = f.vsBaseline
    lines.push(
      `| ${target} | ${connections} | ${f.rps.toFixed(0)} | ${f.p50Ms.toFixed(3)} | ${f.p99Ms.toFixed(3)} | ${f.failed} | ${f.cpuUsPerRequest.toFixed(0)} | ${percent(v.rps)} | ${signedMs(v.p50Ms)} | ${percent(v.cpu)} |`,
    )
  }
  return lines.join('\n')
}

export const percent = (ratio: number): string => `${(ratio * 100).toFixed(0)}%`
export const signedMs = (ms: number): string => `${ms >= 0 ? '+' : ''}${ms.toFixed(3)} ms`
