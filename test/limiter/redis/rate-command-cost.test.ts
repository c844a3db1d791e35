import type { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { gcraParams } from '../../../src/limiter/rate/gcra.js'
import { holdStarts, reserveStart } from '../../../src/limiter/redis/rate/index.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { uniquePrefix } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'

// What a rated request costs inside Redis (docs/redis-limiter.md, "Rates", cost): one script, four
// commands, counted with INFO commandstats on a private redis-server.

const redis = useRedis()

async function commandsOf(client: Redis, fn: () => Promise<unknown>): Promise<Record<string, number>> {
  await client.config('RESETSTAT')
  await fn()
  const info = await client.info('commandstats')
  const counts: Record<string, number> = {}
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([a-z|]+):calls=(\d+)/.exec(line)
    if (!m || ['info', 'config|resetstat'].includes(m[1]!)) continue
    counts[m[1]!] = Number(m[2])
  }
  return counts
}

describe('redis rate script: commands per request', () => {
  it('a reservation: one EVALSHA running TIME HMGET HSET PEXPIRE; a refused one writes nothing', async () => {
    const client = redis.client()
    const scripts = new Scripts(client, undefined, 5_000)
    const key = `${uniquePrefix('rate-cost')}:{k}:rate`
    const params = gcraParams({ requests: 1000, windowMs: 1000, burst: 1000 })
    await reserveStart(scripts, key, params, 60_000) // loads the script (EVALSHA, NOSCRIPT, EVAL) outside the count
    const ten = await commandsOf(client, async () => {
      for (let i = 0; i < 10; i++) await reserveStart(scripts, key, params, 60_000)
    })
    expect(ten).toEqual({ evalsha: 10, time: 10, hmget: 10, hset: 10, pexpire: 10 })
    await holdStarts(scripts, key, 60_000, params)
    const refused = await commandsOf(client, () => reserveStart(scripts, key, params, 100))
    expect(refused).toEqual({ evalsha: 1, time: 1, hmget: 1 })
  })

  it('a hold told to every replica: one PUBLISH in the same script; reservations publish nothing', async () => {
    const client = redis.client()
    const scripts = new Scripts(client, undefined, 5_000)
    const key = `${uniquePrefix('rate-cost')}:{k}:rate`
    const params = gcraParams({ requests: 10, windowMs: 1000, burst: 1 })
    await reserveStart(scripts, key, params, 60_000)
    const news = { channel: `${key}:news`, message: '{}' }
    const held = await commandsOf(client, () => holdStarts(scripts, key, 1_000, params, news))
    expect(held).toEqual({ evalsha: 1, time: 1, hmget: 1, hset: 1, pexpire: 1, publish: 1 })
  })
})
