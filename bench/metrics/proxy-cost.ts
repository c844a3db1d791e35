/**
 * What metrics and the access log cost the proxy (part of `npm run bench`), A/B interleaved so the
 * noise of a shared machine hits every variant alike.
 *
 * Three sluice processes in front of the sim (zero latency): metrics and request log on (the
 * defaults), metrics on and log off, both off. Rounds of ROUND_MS per variant, in turn, at 1 and
 * 64 connections (one instance per connection, so no limit binds); medians of the rounds.
 */
import { cpuMs, freePort, startNode, waitForHttp, type Child } from '../children.js'
import { runLoad } from '../loadgen.js'

const ROUNDS = Number(process.env.ROUNDS ?? 5)
const ROUND_MS = Number(process.env.ROUND_MS ?? 2_000)
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const VARIANTS: { name: string; env: Record<string, string> }[] = [
  { name: 'metrics + request log on (defaults)', env: {} },
  { name: 'metrics on, request log off', env: { SLUICE_REQUEST_LOG: 'false' } },
  { name: 'metrics + request log off', env: { SLUICE_METRICS_ENABLED: 'false', SLUICE_REQUEST_LOG: 'false' } },
]

/** Runs the variants in turn for ROUNDS rounds at 1 and 64 connections; returns a markdown table. */
export async function runMetricsCostBench(): Promise<string> {
  const lines: string[] = []
  const children: Child[] = []
  try {
    const simPort = await freePort()
    children.push(startNode(['dist/sim/main.js'], { SIM_PORT: String(simPort), SIM_HOST: '127.0.0.1', SIM_LATENCY_MS: '0' }))
    const sim = `http://127.0.0.1:${simPort}`
    await waitForHttp(`${sim}/__sim/stats`)
    const targets: { name: string; url: string; pid: number }[] = []
    for (const v of VARIANTS) {
      const [port, adminPort] = [await freePort(), await freePort()]
      children.push(
        startNode(['dist/main.js'], {
          SLUICE_UPSTREAM: `${sim}/v2`,
          SLUICE_PORT: String(port),
          SLUICE_ADMIN_PORT: String(adminPort),
          SLUICE_HOST: '127.0.0.1',
          SLUICE_ADMIN_HOST: '127.0.0.1',
          ...v.env,
        }),
      )
      await waitForHttp(`http://127.0.0.1:${adminPort}/healthz`)
      targets.push({ name: v.name, url: `http://127.0.0.1:${port}`, pid: children[children.length - 1]!.process.pid! })
    }

    lines.push(
      `| variant | conns | req/s (median of ${ROUNDS}) | p50 ms | vs off req/s | proxy CPU µs / request | vs off CPU |`,
      '|---|---:|---:|---:|---:|---:|---:|',
    )
    for (const connections of [1, 64]) {
      const rps = targets.map(() => [] as number[])
      const p50 = targets.map(() => [] as number[])
      const cpu = targets.map(() => [] as number[])
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, t] of targets.entries()) {
          let cpuAtStart = 0
          let cpuUsed = 0
          const r = await runLoad({
            onMeasure: (phase) => (phase === 'start' ? (cpuAtStart = cpuMs(t.pid)) : (cpuUsed = cpuMs(t.pid) - cpuAtStart)),
            url: t.url,
            connections,
            durationMs: ROUND_MS,
            warmupMs: 300,
            path: (c) => `/v2/accounts/${1000 + c}/contacts`,
            headers: (c) => ({ authorization: basic(`org${c}`), 'neon-api-version': '2.12' }),
          })
          rps[i]!.push(r.rps)
          p50[i]!.push(r.p50Ms)
          cpu[i]!.push((cpuUsed * 1000) / r.requests)
        }
      }
      const off = median(rps[targets.length - 1]!)
      const cpuOff = median(cpu[targets.length - 1]!)
      for (const [i, t] of targets.entries()) {
        const m = median(rps[i]!)
        const c = median(cpu[i]!)
        lines.push(
          `| ${t.name} | ${connections} | ${m.toFixed(0)} | ${median(p50[i]!).toFixed(3)} | ${((m / off) * 100).toFixed(0)}% | ${c.toFixed(1)} | ${((c / cpuOff) * 100).toFixed(0)}% |`,
        )
      }
    }
  } finally {
    await Promise.all(children.map((c) => c.stop()))
  }
  return lines.join('\n')
}
