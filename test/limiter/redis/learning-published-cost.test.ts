import { describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { acquire } from '../../../src/limiter/redis/acquire/index.js'
import { grantChannelPrefix, semaphoreKeysOf } from '../../../src/limiter/redis/keys.js'
import { release } from '../../../src/limiter/redis/release/index.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { uniquePrefix } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'

/**
 * With `learning.lowerPublished` (on by default) a published limit-5 endpoint is learned with
 * start = ceiling = 5. While it has never drawn a 429 (no learned hash), a success can change nothing
 * (the rule only adds, and the value is at its ceiling): its release costs what a fixed limit's does,
 * plus the HGET that finds nothing learned (docs/redis-limiter.md, costs).
 */
const redis = useRedis()
const LEASE = 60_000

async function commandsOf(client: Redis, fn: () => Promise<unknown>): Promise<Record<string, number>> {
  await client.config('RESETSTAT')
  await fn()
  const info = await client.info('commandstats')
  const counts: Record<string, number> = {}
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([a-z|]+):calls=(\d+)/.exec(line)
    if (!m || ['evalsha', 'eval', 'info', 'config|resetstat'].includes(m[1]!)) continue
    counts[m[1]!] = Number(m[2])
  }
  return counts
}

describe('what learning costs a published limit that never drew a 429', () => {
  it('a success released on a published limit at its ceiling costs the fixed release and the HGET only', async () => {
    const client = redis.client()
    const scripts = new Scripts(client, undefined, 5_000)
    const prefix = uniquePrefix('cost-published')
    const keys = semaphoreKeysOf(prefix, 'k')
    let sequence = 0
    const id = (): string => waiterId({ replicaId: 'r1', sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app: 'web' })
    const spec = `5 5 1 ${3_600_000}` // published 5, lowerPublished: start 5, ceiling 5
    const acq = (who: string, announce = false) =>
      acquire(scripts, keys, { id: who, replicaId: 'r1', limit: spec, leaseMs: LEASE, liveMs: LEASE, idleMs: 3 * LEASE, ageMs: 0, full: false, announce, instance: 'org1', endpoint: 'GET /accounts/{id}/contacts', channelPrefix: grantChannelPrefix(prefix), wantHead: false, cost: 1 })
    const a = id()
    await acq(a, true)
    const b = id()
    await acq(b)
    const cost = await commandsOf(client, () =>
      release(scripts, keys, { ids: [a], limit: spec, leaseMs: LEASE, idleMs: 3 * LEASE, channelPrefix: grantChannelPrefix(prefix), wantHead: false, answer: { outcome: 'success', heldMs: 10 } }),
    )
    expect(await client.exists(keys.learned)).toBe(0)
    // the fixed limit's release (TIME ZREM ZCARD ZPOPMIN) and the HGET of the learned value
    expect(cost).toEqual({ time: 1, hget: 1, zrem: 1, zcard: 1, zpopmin: 1 })
  })
})
