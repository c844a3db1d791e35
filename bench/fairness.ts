/**
 * Fair share between apps (README "Fair share between apps", method in docs/benchmarks.md): three
 * sluice replicas on one Redis in front of the sim at 50 ms a request, organisation 1001's limit-1
 * `POST /accounts/search`, every app naming itself with `x-sluice-app`.
 *
 * 1. A batch app keeps 24 searches waiting (24 closed-loop clients) while a web app sends one search
 *    every 500 ms: the web app's time to answer (its wait plus the API's 50 ms), how busy the key
 *    was (the sim's own figure), and the 429s any client saw.
 * 2. Two busy apps weighted 3:1, 12 closed-loop clients each: each app's share of the grants.
 *
 * It prints figures, never a verdict. Needs `npm run build` (dist/main.js). About 45 s.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { send } from '../test/support/http.js'
import { spawnProxy, type ProxyProcess } from '../test/support/process.js'
import { startRedis } from '../test/support/redis.js'
import { startSim, statsKey, type Sim } from '../src/sim/index.js'

const ORG = '1001'
const ENDPOINT = 'POST /accounts/search'
const PATH = '/v2/accounts/search'
const LATENCY_MS = 50
const APP_HEADER = 'x-sluice-app'
const basic = `Basic ${Buffer.from(`${ORG}:bench-key`).toString('base64')}`

/**
 * The env of every replica for the given per-app weights (app name → weight; empty: every app weight
 * 1): `fairness.apps.<name>.weight` (README "Fair share between apps") through SLUICE_FAIRNESS_APPS.
 */
export function fairnessEnv(weights: Readonly<Record<string, number>>): Record<string, string> {
  if (Object.keys(weights).length === 0) return {}
  const apps = Object.fromEntries(Object.entries(weights).map(([app, weight]) => [app, { weight }]))
  return { SLUICE_FAIRNESS_APPS: JSON.stringify(apps) }
}

export interface FairnessFigures {
  /** scenario 1 */
  readonly webSearches: number
  readonly webP50Ms: number
  readonly webP99Ms: number
  readonly webMaxMs: number
  readonly batchSearches: number
  /** the key's busy fraction at the API over the measured time (sim: time with a request in progress / elapsed) */
  readonly busyFraction: number
  /** 429s the clients received (sluice's own and any passed on), both scenarios */
  readonly client429s: number
  /** answers other than 200 and 429 the clients received, both scenarios */
  readonly clientOther: number
  /** scenario 2: grants (searches answered) per app over the measured time */
  readonly weighted: readonly { readonly app: string; readonly weight: number; readonly searches: number }[]
  readonly measuredMs: number
  readonly weightedMeasuredMs: number
}

interface Tally {
  client429s: number
  clientOther: number
}

async function search(proxy: ProxyProcess, app: string, tally: Tally, counting: () => boolean): Promise<number> {
  const answer = await send(proxy.url, PATH, {
    method: 'POST',
    headers: { authorization: basic, [APP_HEADER]: app, 'content-type': 'application/json' },
    body: '{"searchFields":[]}',
  })
  if (counting() && answer.status === 429) tally.client429s++
  else if (counting() && answer.status !== 200) tally.clientOther++
  return answer.status
}

/** `n` clients of `app`, each sending its next search as soon as the last is answered, spread over the replicas. */
function closedLoop(
  proxies: readonly ProxyProcess[],
  app: string,
  n: number,
  stop: () => boolean,
  tally: Tally,
  counting: () => boolean,
  done: (status: number) => void,
): Promise<void[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const proxy = proxies[i % proxies.length]!
      while (!stop()) done(await search(proxy, app, tally, counting))
    }),
  )
}

const quantile = (sorted: readonly number[], q: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!

async function replicas(
  redisUrl: string,
  sim: Sim,
  weights: Readonly<Record<string, number>>,
): Promise<ProxyProcess[]> {
  const env = {
    SLUICE_UPSTREAM: sim.apiUrl,
    SLUICE_REDIS_URL: redisUrl,
    SLUICE_REQUEST_LOG: 'false',
    ...fairnessEnv(weights),
  }
  return Promise.all([1, 2, 3].map(() => spawnProxy(env)))
}

/** Scenario 1: a batch app that keeps 24 searches waiting, a web app with one search every 500 ms. */
async function webBehindBatch(
  redisUrl: string,
  sim: Sim,
  measureMs: number,
  tally: Tally,
): Promise<
  Pick<
    FairnessFigures,
    'webSearches' | 'webP50Ms' | 'webP99Ms' | 'webMaxMs' | 'batchSearches' | 'busyFraction' | 'measuredMs'
  >
> {
  const proxies = await replicas(redisUrl, sim, {})
  let stop = false
  let measuring = false
  let batchSearches = 0
  const webTimes: number[] = []
  try {
    const batch = closedLoop(
      proxies,
      'batch',
      24,
      () => stop,
      tally,
      () => measuring,
      (status) => {
        if (measuring && status === 200) batchSearches++
      },
    )
    await sleep(2_000) // warm up: the batch's 24 searches are queued
    sim.reset()
    measuring = true
    const started = performance.now()
    const web: Promise<void>[] = []
    for (let i = 0; performance.now() - started < measureMs; i++) {
      const proxy = proxies[i % proxies.length]!
      web.push(
        (async () => {
          const sent = performance.now()
          const status = await search(proxy, 'web', tally, () => true)
          if (status === 200) webTimes.push(performance.now() - sent)
        })(),
      )
      await sleep(500)
    }
    await Promise.all(web)
    const stats = sim.stats()
    measuring = false
    stop = true
    await batch
    const key = stats.keys[statsKey(ORG, ENDPOINT)]
    webTimes.sort((a, b) => a - b)
    return {
      webSearches: webTimes.length,
      webP50Ms: quantile(webTimes, 0.5),
      webP99Ms: quantile(webTimes, 0.99),
      webMaxMs: webTimes.at(-1) ?? Number.NaN,
      batchSearches,
      busyFraction: key === undefined ? 0 : key.busyMs / stats.elapsedMs,
      measuredMs: stats.elapsedMs,
    }
  } finally {
    stop = true
    await Promise.all(proxies.map((p) => p.stop()))
  }
}

/** Scenario 2: two busy apps, weighted 3:1, 12 closed-loop clients each. */
async function weightedShare(
  redisUrl: string,
  sim: Sim,
  measureMs: number,
  tally: Tally,
): Promise<Pick<FairnessFigures, 'weighted' | 'weightedMeasuredMs'>> {
  const weights = { heavy: 3, light: 1 }
  const proxies = await replicas(redisUrl, sim, weights)
  let stop = false
  let measuring = false
  const searches = new Map<string, number>(Object.keys(weights).map((app) => [app, 0]))
  try {
    const loops = Object.keys(weights).map((app) =>
      closedLoop(
        proxies,
        app,
        12,
        () => stop,
        tally,
        () => measuring,
        (status) => {
          if (measuring && status === 200) searches.set(app, searches.get(app)! + 1)
        },
      ),
    )
    await sleep(2_000)
    const started = performance.now()
    measuring = true
    await sleep(measureMs)
    measuring = false
    const elapsed = performance.now() - started
    stop = true
    await Promise.all(loops)
    return {
      weighted: Object.entries(weights).map(([app, weight]) => ({ app, weight, searches: searches.get(app)! })),
      weightedMeasuredMs: elapsed,
    }
  } finally {
    stop = true
    await Promise.all(proxies.map((p) => p.stop()))
  }
}

export async function runFairnessFigures(
  measureMs = Number(process.env.SLUICE_BENCH_FAIRNESS_MS ?? 20_000),
): Promise<FairnessFigures> {
  const sim = await startSim({ latencyMs: LATENCY_MS })
  const redis = await startRedis()
  const tally: Tally = { client429s: 0, clientOther: 0 }
  try {
    const first = await webBehindBatch(redis.url, sim, measureMs, tally)
    const second = await weightedShare(redis.url, sim, measureMs / 2, tally)
    return { ...first, ...second, ...tally }
  } finally {
    await redis.close()
    await sim.close()
  }
}

const ms = (n: number): string => (Number.isFinite(n) ? n.toFixed(0) : '–')

export function fairnessTables(f: FairnessFigures): string {
  const total = f.weighted.reduce((n, w) => n + w.searches, 0)
  const weightTotal = f.weighted.reduce((n, w) => n + w.weight, 0)
  return [
    `Web app behind a batch app (24 searches kept waiting), ${(f.measuredMs / 1000).toFixed(1)} s measured:`,
    '',
    '| web searches | web time to answer p50 ms | p99 ms | max ms | web wait p50 ms | web wait p99 ms | batch searches | key busy at the API | client 429s | other non-200 |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${f.webSearches} | ${ms(f.webP50Ms)} | ${ms(f.webP99Ms)} | ${ms(f.webMaxMs)} | ${ms(f.webP50Ms - LATENCY_MS)} | ${ms(f.webP99Ms - LATENCY_MS)} | ${f.batchSearches} | ${f.busyFraction.toFixed(3)} | ${f.client429s} | ${f.clientOther} |`,
    '',
    `(time to answer: sent to answered, at the client; wait: that less the API's ${LATENCY_MS} ms; client 429s and other non-200 count both scenarios)`,
    '',
    `Two busy apps, weights ${f.weighted.map((w) => w.weight).join(':')}, 12 clients each, ${(f.weightedMeasuredMs / 1000).toFixed(1)} s measured:`,
    '',
    '| app | weight | searches answered | share of grants | share its weight asks for |',
    '|---|---:|---:|---:|---:|',
    ...f.weighted.map(
      (w) =>
        `| ${w.app} | ${w.weight} | ${w.searches} | ${total === 0 ? '–' : ((100 * w.searches) / total).toFixed(1) + '%'} | ${((100 * w.weight) / weightTotal).toFixed(0)}% |`,
    ),
  ].join('\n')
}

export async function runFairnessBench(): Promise<string> {
  return fairnessTables(await runFairnessFigures())
}
