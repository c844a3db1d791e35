/**
 * `npm run bench -- shares`: what the shares of what all apps share cost a request (docs/deploy.md,
 * "Memory: a budget"; docs/reuse.md, "How many may follow"; docs/apps.md, "Shares of the queue";
 * docs/upstreams.md, "Instance"), each beside
 * the same work without it, in one run: ns per request, the median of 5 rounds of 10^6 (10^5 for hashes).
 */
import { createHash } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import { MemoryBudget } from '../src/budget/budget.js'
import { canonicalCredential, instanceReader } from '../src/proxy/instance.js'
import { holdRequest } from '../src/proxy/memory-hold.js'
import type { Tracked } from '../src/proxy/tracking.js'
import type { AppPolicy } from '../src/limiter/fairness/policy.js'
import { QueueBounds } from '../src/limiter/redis/queue-bounds.js'
import type { Waiter, WaiterState } from '../src/limiter/redis/waiter.js'
import { Coalescer } from '../src/reuse/coalescer.js'

const MiB = 1024 * 1024
const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** ns per call of `work(i)`, less the empty loop's, median of 5 rounds. */
function nsPer(n: number, work: (i: number) => void): number {
  const rounds: number[] = []
  for (let round = 0; round < 5; round++) {
    let t = process.hrtime.bigint()
    for (let i = 0; i < n; i++) if (i < 0) work(i)
    const base = Number(process.hrtime.bigint() - t)
    t = process.hrtime.bigint()
    for (let i = 0; i < n; i++) work(i)
    rounds.push((Number(process.hrtime.bigint() - t) - base) / n)
  }
  return median(rounds)
}

/** eight apps, as a request's app name is: a string made once */
const APPS = Array.from({ length: 8 }, (_, i) => `app${i}`)
const GROUPS = Array.from({ length: 16 }, (_, i) => `org${i}\nGET /accounts/{id}`)

/**
 * One request's hold and release: `holder` undefined is the budget without shares. 64 requests are
 * held at once (each released 64 requests later), as under load, where an app's entry outlives each request.
 */
function holdNs(budget: MemoryBudget, body: boolean, holder: string | undefined): number {
  const res = { closed: false } as ServerResponse
  const ring: Tracked[] = Array.from({ length: 64 }, () => ({}) as Tracked)
  return nsPer(1_000_000, (i) => {
    const old = ring[i & 63]!
    old.held?.release()
    old.heldBody?.release()
    const tracked = {} as Tracked
    const grow = holdRequest(budget, tracked, res, body, body ? 1_000 : undefined, MiB, holder && APPS[i & 7])
    grow?.(1_000)
    ring[i & 63] = tracked
  })
}

/** What QueueBounds reads of a waiter: its policy, its options, its state. */
interface BenchWaiter {
  policy: AppPolicy
  ticket: { options: { maxQueue: number; followers?: () => number } }
  state: WaiterState
  live: boolean
}

/**
 * One waiter of the Redis limiter through one key's queue bounds on this replica: it enters, is
 * queued, and leaves granted 64 waiters later (as under load), its app with a share (counted per app,
 * its followers asked) or without (uncapped: the total alone).
 */
function boundsNs(policy: AppPolicy, followers: (() => number) | undefined): number {
  const bounds = new QueueBounds<unknown>()
  const ring: (BenchWaiter | undefined)[] = Array.from({ length: 64 }, () => undefined)
  const options = { maxQueue: 1000, followers }
  return nsPer(1_000_000, (i) => {
    const old = ring[i & 63]
    if (old !== undefined) {
      old.state = 'granted'
      old.live = false
      bounds.moved(old as unknown as Waiter<unknown>, 'queued', 'granted')
    }
    const waiter: BenchWaiter = { policy, ticket: { options }, state: 'new', live: true }
    bounds.enter(waiter as unknown as Waiter<unknown>)
    waiter.state = 'queued'
    bounds.moved(waiter as unknown as Waiter<unknown>, 'new', 'queued')
    ring[i & 63] = waiter
  })
}

export function runSharesBench(): string {
  const rows: string[] = ['| what, per request | without | with | added |', '|---|---|---|---|']
  const row = (what: string, without: number, withIt: number): void =>
    void rows.push(
      `| ${what} | ${without.toFixed(0)} ns | ${withIt.toFixed(0)} ns | ${(withIt - without).toFixed(0)} ns |`,
    )
  const budget = new MemoryBudget(1024 * MiB, 0.5)
  row(
    'memory budget: hold and release, no body (holder, share 0.5)',
    holdNs(budget, false, undefined),
    holdNs(budget, false, 'x'),
  )
  row(
    'memory budget: with a 1,000-byte body charged as it arrives',
    holdNs(budget, true, undefined),
    holdNs(budget, true, 'x'),
  )
  const uncapped = new Coalescer(1000)
  const capped = new Coalescer(1000, () => 200)
  // 64 waits at once, each ended 64 later, as while requests queue
  const wait = (c: Coalescer): number => {
    const ends: ((() => void) | undefined)[] = Array.from({ length: 64 }, () => undefined)
    return nsPer(1_000_000, (i) => {
      ends[i & 63]?.()
      ends[i & 63] = c.waitBegins(GROUPS[i & 15]!, 'batch')
    })
  }
  row("a permit's wait counted for its app's followers (app with maxQueued)", wait(uncapped), wait(capped))
  // With app identity on every app has a share of the queue (queue.maxShare): the costs below are every request's.
  const followersOf = (i: number): (() => number) => {
    const group = GROUPS[i & 15]!
    return () => capped.followersOf(group, 'batch')
  }
  row(
    "queue share: the app's followers counter made, and read once it must wait",
    nsPer(1_000_000, (i) => void GROUPS[i & 15]!.length),
    nsPer(1_000_000, (i) => void followersOf(i)()),
  )
  const policy = (maxQueued: number): AppPolicy => ({ app: 'batch', cost: 1, maxHeld: Infinity, maxQueued })
  row(
    "queue share, Redis limiter: a waiter through the key's bounds (no share → share 500)",
    boundsNs(policy(Infinity), undefined),
    boundsNs({ ...policy(500), queuedByShare: true }, () => capped.followersOf(GROUPS[0]!, 'batch')),
  )
  const auth = `Bearer ghp_${'x'.repeat(36)}`
  const aliases = new Map([['token', 'bearer']])
  const digest = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16)
  row(
    'credential instance: digest of the raw text → of its canonical form',
    nsPer(100_000, () => digest(auth.trim())),
    nsPer(100_000, () => digest(canonicalCredential(auth, aliases))),
  )
  const byPath = instanceReader({ from: 'path', segment: 2 }, 'x-sluice-instance')
  const rest = '/users/al%69ce/messages/123'
  row(
    'path instance: the raw segment → the segment as forwarded',
    nsPer(1_000_000, () => rest.split('/').filter((s) => s !== '')[1]),
    nsPer(1_000_000, () => byPath({}, rest)),
  )
  return rows.join('\n')
}
