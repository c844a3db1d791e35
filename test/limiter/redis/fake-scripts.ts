import { Deadlines } from '../../../src/limiter/deadlines.js'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import type { RunOptions, ScriptDef, ScriptRunner } from '../../../src/limiter/redis/script.js'
import { SharedPermits } from '../../../src/limiter/redis/shared.js'
import { SluicePermit, Ticket } from '../../../src/limiter/redis/ticket.js'
import type { WaiterState } from '../../../src/limiter/redis/waiter.js'
import type { LearnOptions, LimitChange, Permit } from '../../../src/limiter/types.js'
import { key } from './helpers.js'

/** One script call a FakeScripts holds until the test answers it. */
export interface Call {
  readonly name: string
  readonly args: readonly (string | number)[]
  readonly options: RunOptions | undefined
  answer(reply: unknown): void
  fail(err: Error): void
}

/**
 * A script runner that answers each script when the test says so, in the order the test picks: the
 * race rules of the shared side without timing.
 */
export class FakeScripts implements ScriptRunner {
  readonly calls: Call[] = []
  run(
    def: ScriptDef,
    _keys: readonly string[],
    args: readonly (string | number)[],
    options?: RunOptions,
  ): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.calls.push({ name: def.name, args, options, answer: resolve, fail: reject }),
    )
  }
  /** the oldest unanswered call of that script (and takes it off the list) */
  take(name: string): Call {
    const i = this.calls.findIndex((c) => c.name === name)
    if (i < 0) throw new Error(`no ${name} script sent (sent: ${this.calls.map((c) => c.name).join(', ') || 'none'})`)
    return this.calls.splice(i, 1)[0]!
  }
  names(): string[] {
    return this.calls.map((c) => c.name)
  }
}

/** Lets the replies' continuations run (a few microtask hops). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve()
}

export const turn = (): Promise<void> => new Promise((r) => setImmediate(r))

export const LEASE_MS = 3_000
export const SYNC_MS = 1_000

// acquire replies: [kind, head, forgot] with kind 1 granted, 0 queued, 2 full
export const GRANTED = [1, 0, 0]
export const QUEUED = [0, 0, 0]
export const QUEUED_AT_HEAD = [0, 1, 0]

export const idOf = (call: Call): string => String(call.args[0])

const redisGrant = (permit: Permit | undefined) => {
  const grant = (permit as SluicePermit).grant
  if (grant.kind !== 'redis') throw new Error('expected a Redis permit')
  return grant
}
export const tagOf = (permit: Permit | undefined): string => redisGrant(permit).tag
export const permitId = (permit: Permit | undefined): string => redisGrant(permit).id

/** What a request may carry besides its limit. */
export interface RequestOptions {
  readonly signal?: AbortSignal
  readonly arrivedAt?: number
  readonly learn?: LearnOptions
  readonly app?: string
  /** the replica's longest queue for the key (`queue.maxLength`); default 100 */
  readonly maxQueue?: number
  /** the app's followers of identical calls on the key now (they count toward its maxQueued) */
  readonly followers?: () => number
}

/**
 * SharedPermits on a FakeScripts and a fake clock (starting at `startAt`), with fair share between
 * apps when `fairness` (its settings) is given, telling `waiterMoved` of every waiter move. `request` queues a ticket for the key; its outcome
 * is read from the returned record. `close` fails the tickets left and stops the permits; `drain` does
 * what RedisLimiter.drain does (the shared side told it is closing, then every ticket failed, oldest first).
 */
export function fakeShared(
  o: {
    startAt?: number | undefined
    fairness?: unknown
    waiterMoved?: (id: string, from: WaiterState, to: WaiterState) => void
    /** redis.keepPermits (on by default, as in production) */
    keepPermits?: boolean
  } = {},
) {
  const scripts = new FakeScripts()
  let now = o.startAt ?? 1_000
  const lost: SluicePermit[] = []
  const failed: unknown[] = []
  const changes: LimitChange[] = []
  const shared: SharedPermits = new SharedPermits(
    scripts,
    {
      prefix: 'p',
      replicaId: 'r1',
      channelPrefix: 'p:grant:',
      leaseMs: LEASE_MS,
      syncMs: SYNC_MS,
      liveMs: LEASE_MS,
      idleMs: 3 * LEASE_MS,
      now: () => now,
      keepPermits: o.keepPermits !== false,
      ...(o.fairness === undefined ? {} : { fairness: new FairShare(fairnessSettingsSchema.parse(o.fairness)) }),
    },
    {
      makePermit: (k, limit, grant, waitedMs, app) =>
        new SluicePermit(
          k,
          limit,
          grant,
          waitedMs,
          (p, outcome) => shared.releasePermit(p, outcome),
          (p) => shared.leaseHolds(p),
          app,
        ),
      limitChanged: (_k, change) => changes.push(change),
      failed: (err) => failed.push(err),
      keyBroken: (_k, err) => failed.push(err),
      reroute: () => {},
      lost: (p) => lost.push(p),
      waiterMoved: o.waiterMoved,
    },
  )
  const tickets: Ticket[] = []
  const deadlines = new Deadlines()
  const request = (limit = 1, r: RequestOptions = {}) => {
    const outcome: { permit?: Permit; error?: Error } = {}
    const ticket = new Ticket(
      key,
      { limit, maxQueue: 100, deadline: Date.now() + 60_000, ...r },
      (p) => (outcome.permit = p),
      (e) => (outcome.error = e),
      () => {},
      deadlines,
    )
    tickets.push(ticket)
    shared.enqueue(ticket)
    return outcome
  }
  const advance = (ms: number): void => void (now += ms)
  const close = (): void => {
    for (const t of tickets) t.fail(new Error('test over'))
    shared.stop()
  }
  const drain = (): void => {
    shared.closing()
    for (const t of tickets) t.fail(new Error('sluice is shutting down'))
  }
  return { scripts, shared, request, advance, lost, failed, changes, close, drain }
}
