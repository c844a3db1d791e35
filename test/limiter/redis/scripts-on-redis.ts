import type { Redis } from 'ioredis'
import { beforeEach, expect } from 'vitest'
import { acquire } from '../../../src/limiter/redis/acquire/index.js'
import { grantChannelPrefix, semaphoreKeysOf, type SemaphoreKeys } from '../../../src/limiter/redis/keys.js'
import { release } from '../../../src/limiter/redis/release/index.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { uniquePrefix } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'

export const LEASE_MS = 60_000

/** A waiter to queue: its app, and what its replica would put in its id and acquire. */
export interface Who {
  readonly app: string
  /** 'r1' unless told */
  readonly replica?: string
  /** 1 / weight (1 unless told) */
  readonly cost?: number
  readonly maxHeld?: number
  readonly age?: number
  /** the id's arrival (the tie-break); now unless told */
  readonly arrivedAt?: number
}

/**
 * The acquire and release scripts straight on a private redis-server, one script after another (no
 * replica, no timer): a fresh key under a fresh prefix for each test. Call at the top of a test file.
 */
export function scriptsOnRedis(name: string) {
  const redis = useRedis()
  let client: Redis | undefined
  let scripts: Scripts | undefined
  let keys: SemaphoreKeys | undefined
  let prefix = ''
  let sequence = 0
  beforeEach(() => {
    client = redis.client()
    scripts = new Scripts(client, undefined, 5_000)
    prefix = uniquePrefix(name)
    keys = semaphoreKeysOf(prefix, 'k1')
  })
  const running = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('scriptsOnRedis: only while tests run')
    return v
  }

  /** Queues (or grants at once) a waiter; returns its id and what the script answered. `limit`: a number, or the scripts' limit argument (a learned one's `start ceiling floor idleMs`). */
  async function enter(who: Who, limit: number | string = 1): Promise<{ id: string; kind: string }> {
    const replica = who.replica ?? 'r1'
    const id = waiterId({
      replicaId: replica,
      sequence: ++sequence,
      arrivedAt: who.arrivedAt ?? Date.now(),
      maxHeld: who.maxHeld ?? Infinity,
      app: who.app,
    })
    const reply = await acquire(running(scripts), running(keys), {
      id,
      replicaId: replica,
      limit: String(limit),
      leaseMs: LEASE_MS,
      liveMs: LEASE_MS,
      idleMs: 3 * LEASE_MS,
      ageMs: who.age ?? 0,
      full: false,
      announce: true,
      instance: 'org1',
      endpoint: 'POST /accounts/search',
      channelPrefix: grantChannelPrefix(prefix),
      wantHead: false,
      cost: who.cost ?? 1,
    })
    return { id, kind: reply.kind }
  }

  /** Releases (or withdraws) those ids, as their replica does (the first id's); returns the ids granted. */
  async function leave(ids: string[], limit: number | string = 1): Promise<string[]> {
    const replicaId = ids[0]?.slice(0, ids[0].lastIndexOf('/')) ?? 'r1'
    const r = await release(running(scripts), running(keys), {
      ids,
      limit: String(limit),
      leaseMs: LEASE_MS,
      idleMs: 3 * LEASE_MS,
      channelPrefix: grantChannelPrefix(prefix),
      replicaId,
      wantHead: false,
    })
    return [...r.granted]
  }

  /** Messages on a replica's grant channel while `fn` runs. */
  async function heardBy(replica: string, fn: () => Promise<unknown>): Promise<string[]> {
    const sub = redis.client()
    const heard: string[] = []
    sub.on('message', (_c: string, m: string) => heard.push(m))
    await sub.subscribe(grantChannelPrefix(prefix) + replica)
    await fn()
    // a marker published after the script: every message the script sent was delivered before it
    await running(client).publish(grantChannelPrefix(prefix) + replica, 'marker')
    await expect.poll(() => heard).toContain('marker')
    await sub.quit()
    return heard.filter((m) => m !== 'marker')
  }

  /** Redis's clock in ms, as the scripts read it. */
  async function redisNow(): Promise<number> {
    const [s, us] = await running(client).time()
    return Number(s) * 1000 + Math.floor(Number(us) / 1000)
  }

  return {
    enter,
    leave,
    heardBy,
    redisNow,
    redis,
    get client(): Redis {
      return running(client)
    },
    get scripts(): Scripts {
      return running(scripts)
    },
    get keys(): SemaphoreKeys {
      return running(keys)
    },
    get prefix(): string {
      return prefix
    },
    /** how many waiters entered so far (the last id's sequence) */
    get sequence(): number {
      return sequence
    },
  }
}

/** The app at the end of a waiter id. */
export const appOf = (id: string): string => id.slice(id.lastIndexOf(':') + 1)
