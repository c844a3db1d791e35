/**
 * Learned limits (README "Learned limits"): three sluice replicas on one Redis in front of the sim,
 * which keeps limits to itself on a "–" endpoint, `GET /accounts/{id}/memberships`: 2 for
 * organisation 1001, 12 for 1002 (sluice starts from `limits.default`, 5). 24 closed-loop clients per
 * organisation, spread over the replicas, each asking for another account (so identical reads do not
 * share a call). Judged by the sim after a learning window: the share of its attempts it answered 429,
 * and the time-integral of requests in progress / (hidden limit × time). Once with learning off
 * (today's fixed 5), once on. Needs `npm run build` (dist/main.js).
 * SLUICE_BENCH_LEARN_WINDOW_MS and SLUICE_BENCH_LEARN_MEASURE_MS set the two phases (15 s, 15 s).
 */
import { startRedis } from '../test/support/redis.js'
import { withProxies, type ProxyProcess } from '../test/support/process.js'
import { send } from '../test/support/http.js'
import { startSim, type Sim } from '../src/sim/index.js'

const ENDPOINT = 'GET /accounts/{id}/memberships'
export const HIDDEN: Readonly<Record<string, number>> = { '1001': 2, '1002': 12 }
const LOOPS_PER_ORG = 24
const SIM_LATENCY_MS = 40

const basic = (org: string): string => `Basic ${Buffer.from(`${org}:bench-key`).toString('base64')}`
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

export interface LearningRow {
  readonly setup: string
  readonly org: string
  readonly hidden: number
  /** upstream attempts (the sim's requests) in the judged time */
  readonly attempts: number
  /** share of them answered 429 */
  readonly share429: number
  /** time-integral of requests in progress / (hidden limit × time) */
  readonly used: number
  readonly maxInProgress: number
  /** the limit sluice had at the end, as `/status` says (`~` marks a learned one) */
  readonly limitAtEnd: string
  readonly clientNon200: number
}

async function drive(
  proxies: readonly ProxyProcess[],
  sim: Sim,
  setup: string,
  warmMs: number,
  measureMs: number,
): Promise<LearningRow[]> {
  let stop = false
  let measuring = false
  const non200 = new Map<string, number>()
  let seq = 0
  const loops = Object.keys(HIDDEN).flatMap((org) =>
    Array.from({ length: LOOPS_PER_ORG }, async (_, i) => {
      const proxy = proxies[i % proxies.length]!
      while (!stop) {
        const answer = await send(proxy.url, `/v2/accounts/${++seq}/memberships`, {
          headers: { authorization: basic(org) },
        }).catch(() => ({ status: 0 }))
        if (measuring && answer.status !== 200) non200.set(org, (non200.get(org) ?? 0) + 1)
      }
    }),
  )
  await sleep(warmMs)
  sim.reset()
  measuring = true
  await sleep(measureMs)
  const stats = sim.stats()
  measuring = false
  const status = (await (await fetch(`${proxies[0]!.adminUrl}/status`)).json()) as {
    keys: { instance: string; endpoint: string; limit: number; learned?: { value: number } }[]
  }
  stop = true
  await Promise.all(loops)
  return Object.entries(HIDDEN).map(([org, hidden]) => {
    const s = stats.keys[`${org} ${ENDPOINT}`]
    const key = status.keys.find((k) => k.instance === org && k.endpoint === ENDPOINT)
    return {
      setup,
      org,
      hidden,
      attempts: s?.requests ?? 0,
      share429: s && s.requests > 0 ? s.rejected429 / s.requests : 0,
      used: s ? s.requestMs / (hidden * stats.elapsedMs) : 0,
      maxInProgress: s?.maxInProgress ?? 0,
      limitAtEnd:
        key === undefined
          ? '–'
          : key.learned === undefined
            ? String(key.limit)
            : `${key.limit} (learned ${key.learned.value.toFixed(2)})`,
      clientNon200: non200.get(org) ?? 0,
    }
  })
}

export async function runLearningBenchRows(
  windowMs = Number(process.env.SLUICE_BENCH_LEARN_WINDOW_MS ?? 15_000),
  measureMs = Number(process.env.SLUICE_BENCH_LEARN_MEASURE_MS ?? 15_000),
): Promise<LearningRow[]> {
  const sim = await startSim({
    latencyMs: SIM_LATENCY_MS,
    hiddenLimits: Object.fromEntries(Object.entries(HIDDEN).map(([org, n]) => [org, { [ENDPOINT]: n }])),
  })
  const redis = await startRedis()
  const rows: LearningRow[] = []
  try {
    for (const learning of [false, true]) {
      const env = {
        SLUICE_UPSTREAM: sim.apiUrl,
        SLUICE_REQUEST_LOG: 'false',
        SLUICE_REDIS_URL: redis.url,
        SLUICE_REDIS_KEY_PREFIX: `bench-learn-${learning}`,
        SLUICE_LEARNING_ENABLED: String(learning),
      }
      // learning off: nothing to learn, a short warm-up fills the queues
      const measured = await withProxies(3, env, (replicas) =>
        drive(
          replicas,
          sim,
          learning ? 'learning on' : 'learning off (fixed limits.default 5)',
          learning ? windowMs : 3_000,
          learning ? measureMs : Math.min(measureMs, 10_000),
        ),
      )
      rows.push(...measured)
    }
  } finally {
    await redis.close()
    await sim.close()
  }
  return rows
}

export function learningTable(rows: readonly LearningRow[]): string {
  const lines = [
    '| setup | org | hidden limit | upstream attempts | answered 429 | of the hidden limit used | most in progress at the API | limit at the end | client answers ≠ 200 |',
    '|---|---|---:|---:|---:|---:|---:|---|---:|',
  ]
  for (const r of rows) {
    lines.push(
      `| ${r.setup} | ${r.org} | ${r.hidden} | ${r.attempts} | ${(r.share429 * 100).toFixed(1)}% | ${r.used.toFixed(2)} | ${r.maxInProgress} | ${r.limitAtEnd} | ${r.clientNon200} |`,
    )
  }
  return lines.join('\n')
}

/** The table for `npm run bench`. */
export async function runLearningBench(): Promise<string> {
  return learningTable(await runLearningBenchRows())
}
