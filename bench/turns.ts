import { cpuMs } from './children.js'
import { runLoad } from './loadgen.js'

export interface TurnTarget {
  readonly name: string
  readonly url: string
  /** the process serving it, whose CPU time is measured */
  readonly pid: number
  /** its Redis's CPU time so far, ms (INFO cpu), when it has one of its own */
  readonly redisCpuMs?: () => Promise<number>
}

export interface TurnFigures {
  /** medians over the rounds */
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** CPU µs the target's process spent per request */
  readonly cpuUsPerRequest: number
  /** CPU µs its Redis spent per request (median over the rounds), when it has one */
  readonly redisCpuUsPerRequest: number | undefined
  /** answers other than 200, and transport errors, over all rounds */
  readonly failed: number
  /**
   * Against the baseline target, round by round (each round's figure divided by, or less, the
   * baseline's figure of the same round), then the median: how this machine's speed drifts from
   * one second to the next cancels out, which it does not between medians taken separately.
   */
  readonly vsBaseline: { readonly rps: number; readonly p50Ms: number; readonly cpu: number }
  /** the same round-by-round figures' lower and upper quartiles: how far a ratio moves from round to round */
  readonly vsBaselineQuartiles: {
    readonly rps: readonly [number, number]
    readonly p50Ms: readonly [number, number]
    readonly cpu: readonly [number, number]
  }
}

export interface TurnOptions {
  readonly connections: number
  readonly rounds: number
  readonly roundMs: number
  /** index of the target the others are compared with, round by round */
  readonly baseline: number
}

const WARMUP_MS = 300
const quantile = (xs: readonly number[], q: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] ?? NaN
const median = (xs: readonly number[]): number => quantile(xs, 0.5)
const quartiles = (xs: readonly number[]): readonly [number, number] => [quantile(xs, 0.25), quantile(xs, 0.75)]
const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`

interface Sample {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly cpu: number
  readonly redisCpu: number | undefined
}

/**
 * Loads each target in turn, `rounds` times, with the order rotating every round so no target always
 * follows the same one. This machine's speed drifts by up to 1.7x within seconds (a CPU loop timed
 * 50 ms, then 85 ms, while idle), so short rounds side by side, compared round by round
 * (`vsBaseline`), say far more than medians of long runs. One organisation per connection on a
 * limit-5 endpoint, so no limit binds.
 */
export async function measureInTurns(targets: readonly TurnTarget[], o: TurnOptions): Promise<TurnFigures[]> {
  const samples: Sample[][] = targets.map(() => [])
  const failed = targets.map(() => 0)
  for (let round = 0; round < o.rounds; round++) {
    for (let k = 0; k < targets.length; k++) {
      const i = (round + k) % targets.length
      const result = await measureOne(targets[i]!, o)
      samples[i]!.push(result.sample)
      failed[i]! += result.failed
    }
  }
  const base = samples[o.baseline]!
  return samples.map((s, i) => {
    const rps = s.map((x, r) => x.rps / base[r]!.rps)
    const p50 = s.map((x, r) => x.p50 - base[r]!.p50)
    const cpu = s.map((x, r) => x.cpu / base[r]!.cpu)
    return {
      rps: median(s.map((x) => x.rps)),
      p50Ms: median(s.map((x) => x.p50)),
      p99Ms: median(s.map((x) => x.p99)),
      cpuUsPerRequest: median(s.map((x) => x.cpu)),
      redisCpuUsPerRequest: s[0]?.redisCpu === undefined ? undefined : median(s.map((x) => x.redisCpu ?? NaN)),
      failed: failed[i]!,
      vsBaseline: { rps: median(rps), p50Ms: median(p50), cpu: median(cpu) },
      vsBaselineQuartiles: { rps: quartiles(rps), p50Ms: quartiles(p50), cpu: quartiles(cpu) },
    }
  })
}

/** One round of one target: new connections, a short warm-up, then `roundMs` measured. */
async function measureOne(target: TurnTarget, o: TurnOptions): Promise<{ sample: Sample; failed: number }> {
  let cpuAtStart = 0
  let cpuUsed = 0
  // INFO is asked as the measured window opens and closes; its answers are awaited after the load
  let redisStart: Promise<number> | undefined
  let redisEnd: Promise<number> | undefined
  const result = await runLoad({
    url: target.url,
    connections: o.connections,
    durationMs: o.roundMs,
    warmupMs: WARMUP_MS,
    path: (c) => `/v2/accounts/${1000 + c}/contacts`,
    headers: (c) => ({ authorization: basic(`org${c}`), 'neon-api-version': '2.12' }),
    onMeasure: (phase) => {
      if (phase === 'start') {
        cpuAtStart = cpuMs(target.pid)
        redisStart = target.redisCpuMs?.()
      } else {
        cpuUsed = cpuMs(target.pid) - cpuAtStart
        redisEnd = target.redisCpuMs?.()
      }
    },
  })
  const redisCpu =
    redisStart === undefined || redisEnd === undefined
      ? undefined
      : (((await redisEnd) - (await redisStart)) * 1000) / result.requests
  return {
    sample: {
      rps: result.rps,
      p50: result.p50Ms,
      p99: result.p99Ms,
      cpu: (cpuUsed * 1000) / result.requests,
      redisCpu,
    },
    failed:
      result.errors + Object.entries(result.statuses).reduce((n, [code, count]) => n + (code === '200' ? 0 : count), 0),
  }
}
