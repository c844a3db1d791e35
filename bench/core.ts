import { freePort, startNode, startSimChild, startSluiceChild, waitForHttp, type Child } from './children.js'
import { measureInTurns, type TurnFigures, type TurnTarget } from './turns.js'

/**
 * The core benchmark of issue 2: on the sim with zero latency, direct vs a bare @fastify/http-proxy
 * vs sluice (defaults: in-process limiter, request log on, metrics on), at 1 and 64 connections.
 * Each connection is its own instance, so no limit binds: this measures the proxy's own cost.
 * The targets take turns in ROUNDS rounds (medians reported), and the CPU time each process spent
 * per request is measured too.
 */
const ROUNDS = Number(process.env.SLUICE_BENCH_ROUNDS ?? 5)
const ROUND_MS = Number(process.env.SLUICE_BENCH_DURATION_MS ?? 2_000)

export interface CoreRow {
  readonly target: string
  readonly connections: number
  readonly figures: TurnFigures
}

export async function runCoreBench(extraTargets: { name: string; env: Record<string, string> }[] = []): Promise<CoreRow[]> {
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
      const figures = await measureInTurns(targets, { connections, rounds: ROUNDS, roundMs: ROUND_MS })
      for (const [i, target] of targets.entries()) rows.push({ target: target.name, connections, figures: figures[i]! })
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
  for (const { target, connections, figures: f } of rows) {
    const bare = rows.find((r) => r.connections === connections && r.target.startsWith('bare'))?.figures
    const ratio = bare ? `${((f.rps / bare.rps) * 100).toFixed(0)}%` : ''
    const dp50 = bare ? `${f.p50Ms - bare.p50Ms >= 0 ? '+' : ''}${(f.p50Ms - bare.p50Ms).toFixed(3)} ms` : ''
    lines.push(
      `| ${target} | ${connections} | ${f.rps.toFixed(0)} | ${f.p50Ms.toFixed(3)} | ${f.p99Ms.toFixed(3)} | ${f.failed} | ${ratio} | ${dp50} | ${f.cpuUsPerRequest.toFixed(0)} |`,
    )
  }
  return lines.join('\n')
}
