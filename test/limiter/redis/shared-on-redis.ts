import type { Redis } from 'ioredis'
import { Deadlines } from '../../../src/limiter/deadlines.js'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import { Scripts, type RunOptions, type ScriptDef, type ScriptRunner } from '../../../src/limiter/redis/script.js'
import { SharedPermits } from '../../../src/limiter/redis/shared.js'
import { SluicePermit, Ticket } from '../../../src/limiter/redis/ticket.js'
import type { Permit } from '../../../src/limiter/types.js'
import { uniquePrefix } from '../../support/redis.js'
import { key } from './helpers.js'

/**
 * The real scripts on a real redis-server, whose REPLIES the test may hold: while `hold` names a
 * script, each call of it runs in Redis and its reply waits (in `held`, oldest first) until the test
 * lets it through. Races between a script that has run and the replica reading its reply, without timing.
 */
export class HoldingRunner implements ScriptRunner {
  hold: ReadonlySet<string> = new Set()
  readonly held: { readonly name: string; readonly args: readonly (string | number)[]; pass(): void }[] = []
  constructor(private readonly inner: ScriptRunner) {}
  async run(
    def: ScriptDef,
    keys: readonly string[],
    args: readonly (string | number)[],
    options?: RunOptions,
  ): Promise<unknown> {
    const holding = this.hold.has(def.name)
    const reply = await this.inner.run(def, keys, args, options)
    if (holding) await new Promise<void>((pass) => this.held.push({ name: def.name, args, pass }))
    return reply
  }
  /** lets every reply held so far through, in order */
  passAll(): void {
    for (const h of this.held.splice(0)) h.pass()
  }
}

/**
 * SharedPermits (replica `replicaId`) on a real redis-server through a HoldingRunner, with a fake
 * monotonic clock (`advance`), fair share when `fairness` (its settings) is given. `request` queues a
 * ticket for the test key; its outcome is read from the returned record.
 */
export function sharedOnRedis(
  client: Redis,
  o: { prefix?: string; replicaId?: string; leaseMs?: number; fairness?: unknown } = {},
) {
  const runner = new HoldingRunner(new Scripts(client, undefined, 5_000))
  const prefix = o.prefix ?? uniquePrefix('shared')
  const leaseMs = o.leaseMs ?? 60_000
  let now = 1_000
  const lost: SluicePermit[] = []
  const recounted: { counted: number; heldBack: number }[] = []
  const shared: SharedPermits = new SharedPermits(
    runner,
    {
      prefix,
      replicaId: o.replicaId ?? 'r1',
      channelPrefix: `${prefix}:grant:`,
      leaseMs,
      syncMs: Math.floor(leaseMs / 3),
      liveMs: leaseMs,
      idleMs: 3 * leaseMs,
      now: () => now,
      ...(o.fairness === undefined ? {} : { fairness: new FairShare(fairnessSettingsSchema.parse(o.fairness)) }),
    },
    {
      makePermit: (k, limits, grant, waitedMs, app) =>
        new SluicePermit(
          k,
          limits,
          grant,
          waitedMs,
          (p, outcome) => shared.releasePermit(p, outcome),
          (p) => shared.leaseHolds(p),
          app,
        ),
      failed: () => {},
      keyBroken: () => {},
      reroute: () => {},
      lost: (p) => {
        lost.push(p)
        p.markLost(new Error('lost'))
      },
      recounted: (_k, counts) => recounted.push(counts),
    },
  )
  const deadlines = new Deadlines()
  const tickets: Ticket[] = []
  const request = (limit: number, r: { app?: string; maxQueue?: number } = {}) => {
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
  const close = (): void => {
    runner.hold = new Set()
    runner.passAll()
    for (const t of tickets) t.fail(new Error('test over'))
    shared.stop()
  }
  return { shared, runner, prefix, request, lost, recounted, advance: (ms: number) => void (now += ms), close }
}
