/**
 * What metrics and the access log cost the proxy (part of `npm run bench`): three sluice processes
 * in front of the sim (zero latency) — metrics and request log on (the defaults), metrics on and log
 * off, both off — taking turns in short rounds at 1 and 64 connections; each comparison with "both
 * off" is the median of the round-by-round comparisons (see turns.ts).
 */
import { startSimChild, startSluiceChild, type Child } from '../children.js'
import { percent, ROUND_MS, ROUNDS, signedMs } from '../core.js'
import { measureInTurns, type TurnTarget } from '../turns.js'

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
      `| variant | conns | req/s | p50 ms | proxy CPU µs / request | vs off: req/s | vs off: p50 | vs off: CPU / request |`,
      '|---|---:|---:|---:|---:|---:|---:|---:|',
    ]
    for (const connections of [1, 64]) {
      const figures = await measureInTurns(targets, {
        connections,
        rounds: ROUNDS,
        roundMs: ROUND_MS,
        baseline: targets.length - 1,
      })
      for (const [i, t] of targets.entries()) {
        const f = figures[i]!
        const v = f.vsBaseline
        lines.push(
          `| ${t.name} | ${connections} | ${f.rps.toFixed(0)} | ${f.p50Ms.toFixed(3)} | ${f.cpuUsPerRequest.toFixed(1)} | ${percent(v.rps)} | ${signedMs(v.p50Ms)} | ${percent(v.cpu)} |`,
        )
      }
    }
    return lines.join('\n')
  } finally {
    await Promise.all(children.map((c) => c.stop()))
  }
}
