import { expect, onTestFinished } from 'vitest'
import { leftovers, simNow, verdict, type Leftovers, type RouteVerdict, type Window } from '../../support/faults.js'
import { until } from '../../support/http.js'
import { ClientLoops, loopsOver, route, type LoopFigures, type Route } from '../../support/load.js'
import { adminJson } from '../../support/proxy.js'
import { startReplicaStack, type ReplicaStack } from '../../support/stack.js'

/*
 * One fault scenario through real processes: three replicas (`node dist/main.js`; `npm run build`
 * first when running a file alone) on a redis-server of their own, in front of the sim, which
 * answers 429 to anything over a limit and counts it. Client loops pinned to replicas keep org
 * 1001's limit-1 search and limit-5 donations keys queued while the test injects its fault.
 * The bar (README, "Guarantees"; docs/faults.md): the sim answers 0 requests with 429 — outside the
 * windows where a fallback mode allows a surplus by design, which end one lease after Redis is
 * back — every client request gets an answer, and nothing is left in Redis afterwards.
 */

/** A short lease keeps the suite fast: every fault is scaled to it. */
export const LEASE_MS = 1_000
/**
 * The lease of the tests that take Redis away and judge from one lease after it is back: above the
 * 1 s cap of the reconnection back-off (src/limiter/redis/connection.ts), so that a replica can be
 * back on Redis within the lease at all.
 */
export const OUTAGE_LEASE_MS = 2_000

export const SEARCH = route('1001', 'POST', '/v2/accounts/search', 'POST /accounts/search', 1)
export const DONATIONS = route('1001', 'GET', '/v2/donations/7', 'GET /donations/{id}', 5)
export const ROUTES: readonly Route[] = [SEARCH, DONATIONS]

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export interface Scenario {
  readonly stack: ReplicaStack
  readonly loops: ClientLoops
  readonly routes: readonly Route[]
  readonly leaseMs: number
  /** windows of the sim's clock in which a fallback mode may put a key over its limit by design */
  readonly allowed: Window[]
  /** what the test did when, on the sim's clock (printed when the bar is missed) */
  readonly marks: string[]
}

/** Notes a fault on the sim's clock, for the report printed when the bar is missed. */
export function mark(s: Scenario, what: string): number {
  const at = Math.round(simNow(s.stack.sim))
  s.marks.push(`${at} ${what}`)
  return at
}

export interface ScenarioOptions {
  readonly env?: Record<string, string>
  readonly leaseMs?: number
  readonly viaTcpProxy?: boolean
  /** client loops per route (spread over the replicas in turn); default 15, 30 in all */
  readonly loopsPerRoute?: number
  readonly simLatencyMs?: number
}

/** Starts the stack and the client loops; everything stops when the test finishes. */
export async function startScenario(o: ScenarioOptions = {}): Promise<Scenario> {
  const leaseMs = o.leaseMs ?? LEASE_MS
  const stack = await startReplicaStack({
    prefixName: 'faults',
    viaTcpProxy: o.viaTcpProxy,
    sim: { latencyMs: o.simLatencyMs ?? 20, arrivalLogSize: 500_000 },
    env: { SLUICE_REDIS_LEASE_MS: String(leaseMs), ...o.env },
  })
  onTestFinished(() => stack.close())
  const loops = new ClientLoops(stack.replicas, loopsOver(ROUTES, o.loopsPerRoute ?? 15, stack.replicas.length))
  loops.start()
  onTestFinished(async () => void (await loops.stop(1_000)))
  await trafficFlows({ loops }, 'traffic through Redis')
  await localSharesSettled(stack, leaseMs)
  return { stack, loops, routes: ROUTES, leaseMs, allowed: [], marks: [] }
}

/**
 * Waits until every replica lists them all, then four heartbeats (`leaseMs` / 3 each) more. A replica
 * takes `local` slots only once its unbroken run of heartbeats has lasted two of them and every other
 * live replica has beaten since it began; after a start it has none, so a replica that falls back
 * sooner serves nothing until Redis is back (docs/redis-limiter.md, "Failure modes": `local`). A fault
 * injected before that tests this cost, not the fallback.
 */
async function localSharesSettled(stack: ReplicaStack, leaseMs: number): Promise<void> {
  const listed = async (): Promise<number[]> =>
    Promise.all(
      stack.replicas.map(async (r) =>
        Number((await adminJson<{ details: { replicas?: number } }>(r, '/status')).details.replicas),
      ),
    )
  await until(
    async () => (await listed()).every((n) => n === stack.replicas.length),
    'every replica listing all of them',
  )
  await sleep((4 * leaseMs) / 3)
}

/** Waits until the loops got `count` more answers (a bound on a stuck run, not a timing assertion). */
export async function trafficFlows(
  s: Pick<Scenario, 'loops'>,
  what: string,
  count = 30,
  timeoutMs = 20_000,
): Promise<void> {
  const before = s.loops.answered()
  await until(() => s.loops.answered() >= before + count, what, timeoutMs)
}

/** Every replica's limiter mode (`/readyz`). */
export const modes = (s: Pick<Scenario, 'stack'>): Promise<string[]> =>
  Promise.all(s.stack.replicas.map(async (r) => (await adminJson<{ mode: string }>(r, '/readyz')).mode))

export async function everyReplicaIn(s: Scenario, mode: string, timeoutMs = 15_000): Promise<void> {
  await until(async () => (await modes(s)).every((m) => m === mode), `every replica in mode ${mode}`, timeoutMs)
  mark(s, `every replica in ${mode}`)
}

/**
 * Redis is away from `downAt` to `backAt` (the sim's clock). Such a fault is judged from one lease
 * after Redis is back: while it is away, `open` (and `local` for a key whose limit is below the
 * number of replicas) may put a key over its limit by design, and that surplus must be gone within
 * one lease after it is back.
 */
export function judgeFromOneLeaseAfter(s: Scenario, downAt: number, backAt: number): void {
  s.allowed.push({ fromMs: downAt, toMs: backAt + s.leaseMs })
}

export interface Outcome {
  /** routes the sim saw over their limit (429s outside the allowed windows) */
  readonly over: readonly RouteVerdict[]
  /** answers other than the ones the scenario expects, by status */
  readonly otherStatuses: Readonly<Record<number, number>>
  readonly errors: readonly string[]
  readonly unanswered: number
  readonly left: Leftovers
  /** replicas that died by themselves */
  readonly exited: readonly number[]
}

/**
 * Stops the loops, waits for every answer, lets the leases of what is left run out, and checks the
 * bar. On a miss, prints what each replica logged at warn and above, and the sim's figures.
 */
export async function expectNeverOverTheLimit(s: Scenario, o: { okStatuses?: readonly number[] } = {}): Promise<void> {
  const ok = o.okStatuses ?? [200]
  const figures: LoopFigures = await s.loops.stop(30_000)
  let left = await leftovers(s.stack)
  const deadline = Date.now() + 5 * s.leaseMs + 5_000
  while ((left.holders > 0 || left.queued > 0) && Date.now() < deadline) {
    await sleep(50)
    left = await leftovers(s.stack)
  }
  const verdicts = verdict(s.stack.sim, s.routes, s.allowed)
  const otherStatuses = Object.fromEntries(
    Object.entries(figures.statuses).filter(([status]) => !ok.includes(Number(status))),
  )
  const outcome: Outcome = {
    over: verdicts.filter((v) => v.rejected429Judged > 0 || v.maxInProgress > v.limit),
    otherStatuses,
    errors: figures.errors.slice(0, 5),
    unanswered: figures.unanswered,
    left,
    // (a replica the test killed was replaced in the array: any process there that exited died by itself)
    exited: s.stack.replicas.filter((r) => r.child.exitCode !== null || r.child.signalCode !== null).map((r) => r.pid),
  }
  const expected: Outcome = {
    over: [],
    otherStatuses: {},
    errors: [],
    unanswered: 0,
    left: { holders: 0, queued: 0, keysWithoutTtl: [] },
    exited: [],
  }
  if (JSON.stringify(outcome) !== JSON.stringify(expected) || process.env.SLUICE_FAULTS_VERBOSE) {
    const logs = s.stack.replicas.map((r, i) => `replica ${i} (pid ${r.pid}):\n${warnings(r.output())}`).join('\n')
    console.log(
      `fault scenario missed the bar\nsim: ${JSON.stringify(verdicts)}\nfaults: ${JSON.stringify(s.marks)}\nallowed: ${JSON.stringify(s.allowed)}\nloops: ${JSON.stringify(figures)}\n${logs}`,
    )
  }
  expect(outcome).toEqual(expected)
  // and the scenario did put load through: the figures above are not vacuous
  expect(verdicts.every((v) => v.requests > 0)).toBe(true)
}

/** The last warn-or-worse lines of a replica's log, short. */
function warnings(output: string): string {
  return output
    .split('\n')
    .filter((l) => /"level":(40|50|60)/.test(l))
    .slice(-25)
    .map((l) => l.slice(0, 400))
    .join('\n')
}
