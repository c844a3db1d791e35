/**
 * What metrics and the access log cost the proxy (part of `npm run bench`): three sluice processes
 * in front of the sim (zero latency) — metrics and request log on (the defaults), metrics on and log
 * off, both off — taking turns in rounds at 1 and 64 connections; medians of the rounds.
 */
import { startSimChild, startSluiceChild, type Child } from '../children.js'
import { measureInTurns, type TurnTarget } from '../turns.js'

const ROUNDS = Number(process.env.SLUICE_BENCH_ROUNDS ?? 5)
const ROUND_MS = Number(process.env.SLUICE_BENCH_DURATION_MS ?? 2_000)

const VARIANTS: { name: string; env: Record<string, string> }[] = [
  { name: 'metrics + request log on (defaults)', env: {} },
  { name: 'metrics on, request log off', env: { SLUICE_REQUEST_LOG: 'false' } },
  { name: 'metrics + request log off', env: { SLUICE_METRICS_ENABLED: 'false', SLUICE_REQUEST_LOG: 'false' } },
]

/** Returns a markdown table; the last variant (both off) is the baseline of the ratios. */
export async function runMetricsCostBench(): Promise<string> {
  const children: Child[] = []
  try {
    const sim = await startSimChild()
    children.push(sim)
    const targets: TurnTarget[] = []
    for (const v of VARIANTS) {
      const sluice = await startSluiceChild(`${sim.url}/v2`, v.env)
      children.push(sluice)
      targets.push({ name: v.name, url: sluice.url, pid: sluice.pid })
    }
    const lines = [
      `| variant | conns | req/s (median of ${ROUNDS}) | p50 ms | vs off req/s | proxy CPU µs / request | vs off CPU |`,
      '|---|---:|---:|---:|---:|---:|---:|',
    ]
    for (const connections of [1, 64]) {
      const figures = await measureInTurns(targets, { connections, rounds: ROUNDS, roundMs: ROUND_MS })
      const off = figures[figures.length - 1]!
      for (const [i, t] of targets.entries()) {
        const f = figures[i]!
        lines.push(
          `| ${t.name} | ${connections} | ${f.rps.toFixed(0)} | ${f.p50Ms.toFixed(3)} | ${((f.rps / off.rps) * 100).toFixed(0)}% | ${f.cpuUsPerRequest.toFixed(1)} | ${((f.cpuUsPerRequest / off.cpuUsPerRequest) * 100).toFixed(0)}% |`,
        )
      }
    }
    return lines.join('\n')
  } finally {
    await Promise.all(children.map((c) => c.stop()))
  }
}
