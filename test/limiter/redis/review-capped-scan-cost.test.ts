import type { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { acquire } from '../../../src/limiter/redis/acquire/index.js'
import { grantChannelPrefix, semaphoreKeysOf } from '../../../src/limiter/redis/keys.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { uniquePrefix } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'

// Review (fair share between apps, maxHeld): while a capped app's backlog sits at the head and
// slots are free, EVERY script that runs grant (each acquire of any app, each release, each
// replica's sync every third of a lease) pops the capped head, puts it back, and reads the whole
// queue a page of 64 at a time looking for an app under its cap: O(queue) commands per script,
// O(queue²) over a backlog (queue.maxLength 1000 per replica × replicas). Counted with INFO
// commandstats: the cost of one acquire should not grow with the capped app's backlog.

const redis = useRedis()
const LEASE = 60_000

async function commandsOf(client: Redis, fn: () => Promise<unknown>): Promise<number> {
  await client.config('RESETSTAT')
  await fn()
  const info = await client.info('commandstats')
  let total = 0
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([a-z|]+):calls=(\d+)/.exec(line)
    if (!m || ['evalsha', 'eval', 'info', 'config|resetstat'].includes(m[1]!)) continue
    total += Number(m[2])
  }
  return total
}

describe('review: commands per script with a capped app backlogged', () => {
  it("an acquire costs the same whether the capped app has 50 or 2000 waiters", async () => {
    const client = redis.client()
    const scripts = new Scripts(client, undefined, 30_000)
    const costWith = async (backlog: number): Promise<number> => {
      const prefix = uniquePrefix('capcost')
      const keys = semaphoreKeysOf(prefix, 'k')
      let sequence = 0
      const acq = (app: string, maxHeld: number, replica = 'r1') =>
        acquire(scripts, keys, {
          id: waiterId({ replicaId: replica, sequence: ++sequence, arrivedAt: Date.now(), maxHeld, app }),
          replicaId: replica,
          limit: 5,
          leaseMs: LEASE,
          liveMs: LEASE,
          idleMs: 3 * LEASE,
          ageMs: 0,
          full: false,
          announce: true,
          instance: 'org1',
          endpoint: 'POST /x',
          channelPrefix: grantChannelPrefix(prefix),
          wantHead: false,
          cost: 1,
        })
      expect((await acq('batch', 1)).kind).toBe('granted')
      for (let i = 0; i < backlog; i++) expect((await acq('batch', 1)).kind).toBe('queued')
      // another app's uncontended-looking request (4 slots free)
      return commandsOf(client, () => acq('web', Infinity))
    }
    const small = await costWith(50)
    const large = await costWith(2000)
    expect(large, `commands for one acquire: backlog 50 → ${small}, backlog 2000 → ${large}`).toBeLessThanOrEqual(small + 2)
  }, 60_000)
})
