import { cpuMs } from './children.js'
import { runLoad } from './loadgen.js'

export interface TurnTarget {
  readonly name: string
  readonly url: string
  /** the process serving it, whose CPU time is measured */
  readonly pid: number
}

export interface TurnFigures {
  /** medians over the rounds */
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** CPU µs the target's process spent per request */
  readonly cpuUsPerRequest: number
  /** answers other than 200, and transport errors, over all rounds */
  readonly failed: number
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`

/**
 * Loads each target in turn, `rounds` times, so the noise of a shared machine hits every target
 * alike; one organisation per connection on a limit-5 endpoint, so no limit binds.
 */
export async function measureInTurns(
  targets: readonly TurnTarget[],
  o: { connections: number; rounds: number; roundMs: number },
): Promise<TurnFigures[]> {
  const samples = targets.map(() => ({ rps: [] as number[], p50: [] as number[], p99: [] as number[], cpu: [] as number[], failed: 0 }))
  for (let round = 0; round < o.rounds; round++) {
    for (const [i, target] of targets.entries()) {
      let cpuAtStart = 0
      let cpuUsed = 0
      const result = await runLoad({
        url: target.url,
        connections: o.connections,
        durationMs: o.roundMs,
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
  return samples.map((s) => ({ rps: median(s.rps), p50Ms: median(s.p50), p99Ms: median(s.p99), cpuUsPerRequest: median(s.cpu), failed: s.failed }))
}
