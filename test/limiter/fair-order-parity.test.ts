import { describe, expect, it } from 'vitest'
import type { AppPolicy } from '../../src/limiter/fairness/policy.js'
import { KeyQueue, type Waiter } from '../../src/limiter/memory/key-queue.js'
import { scriptsOnRedis } from './redis/scripts-on-redis.js'

/**
 * One rule, two implementations: the in-process queue (memory/key-queue.ts) and the Redis scripts
 * (redis/lua-fair.ts) must grant in the same weighted fair order (docs/redis-limiter.md, "Fair share
 * between apps"). The same random arrivals, give-ups and releases go through both — the scripts on a
 * real redis-server, one after another, so the order is exact — and every grant must name the same
 * waiter. Waiters are named `<app>#<n>`, the n-th arrival of the run.
 */

const on = scriptsOnRedis('parity')
const ARRIVED = Date.UTC(2026, 0, 1)

/** A small deterministic generator, so a failure can be repeated from its seed. */
function random(seed: number): () => number {
  let x = seed
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648
    return x / 2147483648
  }
}

interface AppSpec {
  readonly app: string
  readonly cost: number
  readonly maxHeld: number
}

/** The in-process side: a KeyQueue whose waiters record their grants by name. */
class InProcess {
  readonly queue: KeyQueue
  readonly grants: string[] = []
  readonly waiting = new Map<string, Waiter>()

  constructor(limit: number) {
    this.queue = new KeyQueue('org1', 'POST /accounts/search', limit)
  }

  /** `now` past `arrivedAt`: a request that waited before (an upstream 429), back at its place */
  arrive(name: string, spec: AppSpec, arrivedAt: number, now = arrivedAt): void {
    const policy: AppPolicy = { app: spec.app, cost: spec.cost, maxHeld: spec.maxHeld, maxQueued: Infinity }
    if (this.queue.canGrantNow(policy)) {
      this.queue.take(policy)
      this.grants.push(name)
      return
    }
    const waiter: Waiter = {
      arrivedAt,
      enqueuedAt: now,
      policy,
      requeued: now > arrivedAt,
      grant: () => {
        this.waiting.delete(name)
        this.grants.push(name)
      },
      fail: () => undefined,
    }
    this.waiting.set(name, waiter)
    this.queue.enqueue(waiter, now)
    this.queue.dispatch()
  }

  giveUp(name: string): void {
    const waiter = this.waiting.get(name)!
    this.waiting.delete(name)
    expect(this.queue.remove(waiter)).toBe(true)
    this.queue.dispatch()
  }

  release(app: string): void {
    this.queue.give(app)
    this.queue.dispatch()
  }
}

/**
 * Runs `steps` random operations through both sides and compares the grants after each. `apps`
 * arrive with their cost (1 / weight) and cap; a release gives back a random held permit, a give-up
 * withdraws a random waiter, a re-queue gives back a held permit and queues its request again with
 * its age (as after an upstream 429).
 */
async function compare(seed: number, limit: number, apps: readonly AppSpec[], steps: number): Promise<number> {
  const next = random(seed)
  const local = new InProcess(limit)
  const redisGrants: string[] = []
  /** name → Redis id, for waiters and holders alike */
  const ids = new Map<string, string>()
  const held: string[] = []
  const queued: string[] = []
  const byId = new Map<string, string>()
  const arrival = new Map<string, number>()
  const specOf = new Map<string, AppSpec>()
  const enter = async (name: string, spec: AppSpec, arrivedAt: number, now: number): Promise<void> => {
    const entered = await on.enter(
      { app: spec.app, cost: spec.cost, maxHeld: spec.maxHeld, arrivedAt, age: now - arrivedAt },
      limit,
    )
    ids.set(name, entered.id)
    byId.set(entered.id, name)
    if (entered.kind === 'granted') {
      redisGrants.push(name)
      held.push(name)
    } else queued.push(name)
    local.arrive(name, spec, arrivedAt, now)
  }
  const take = (granted: readonly string[]): void => {
    for (const id of granted) {
      const name = byId.get(id)!
      redisGrants.push(name)
      queued.splice(queued.indexOf(name), 1)
      held.push(name)
    }
  }
  for (let step = 0; step < steps; step++) {
    const roll = next()
    const now = ARRIVED + step * 7
    if (roll < 0.45 || (held.length === 0 && queued.length === 0)) {
      const spec = apps[Math.floor(next() * apps.length)]!
      const name = `${spec.app}#${step}`
      arrival.set(name, now)
      specOf.set(name, spec)
      await enter(name, spec, now, now)
    } else if (roll < 0.75 && held.length > 0) {
      const name = held.splice(Math.floor(next() * held.length), 1)[0]!
      take(await on.leave([ids.get(name)!], limit))
      local.release(specOf.get(name)!.app)
    } else if (roll < 0.85 && held.length > 0) {
      const name = held.splice(Math.floor(next() * held.length), 1)[0]!
      take(await on.leave([ids.get(name)!], limit))
      local.release(specOf.get(name)!.app)
      await enter(name, specOf.get(name)!, arrival.get(name)!, now)
    } else if (queued.length > 0) {
      const name = queued.splice(Math.floor(next() * queued.length), 1)[0]!
      take(await on.leave([ids.get(name)!], limit))
      local.giveUp(name)
    }
    expect(local.grants, `seed ${seed}, step ${step}`).toEqual(redisGrants)
  }
  return redisGrants.length
}

const EVEN = [
  { app: 'batch', cost: 1, maxHeld: Infinity },
  { app: 'sync', cost: 1 / 2, maxHeld: Infinity },
  { app: 'web', cost: 1 / 4, maxHeld: Infinity },
]
// a weight of 3: a cost no binary fraction holds exactly; and an app capped at one permit
const ODD = [
  { app: 'batch', cost: 1, maxHeld: Infinity },
  { app: 'web', cost: 1 / 3, maxHeld: Infinity },
  { app: 'report', cost: 1, maxHeld: 1 },
]

// a fresh key for each case (scriptsOnRedis)
describe('fair order: the in-process queue and the Redis scripts grant alike (arrivals, give-ups, re-queues)', () => {
  for (const seed of [11, 12, 13]) {
    it(`limit 1, weights 1, 2 and 4: 400 random steps of seed ${seed}, the same waiter at every grant`, async () => {
      expect(await compare(seed, 1, EVEN, 400)).toBeGreaterThan(100)
    })
  }
  for (const seed of [23, 24, 25]) {
    it(`limit 3, weights 1 and 3, a capped app: 400 random steps of seed ${seed}, the same waiter at every grant`, async () => {
      expect(await compare(seed, 3, ODD, 400)).toBeGreaterThan(100)
    })
  }
})
