import { describe, expect, it } from 'vitest'
import { LUA_COMMON } from '../../../src/limiter/redis/lua-common.js'
import {
  learn,
  enforced,
  initialState,
  type Feedback,
  type LearnBounds,
  type LearnedState,
} from '../../../src/limiter/learning/rule.js'
import { useRedis } from '../../support/use-redis.js'

/**
 * The Redis scripts learn with `learn` of lua-common.ts, the in-process limiter with rule.ts: the same
 * answers must give the same limits. Random sequences of answers go through both, on a real Redis.
 */
const redis = useRedis()

// Runs the Lua rule once on KEYS[1]; ARGV: spec outcome held saturated heldMs now → {before, after, value}
const STEP = `${LUA_COMMON}
local spec = limit_spec(ARGV[1])
-- the script's clock (lua-common's clock() reads TIME once and keeps it): the test's instead
clock_ms = tonumber(ARGV[6])
local before, after, v = learn(KEYS[1], spec, ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1', tonumber(ARGV[5]))
return {before, after, string.format('%.17g', v)}
`

/** A small deterministic generator, so a failure can be repeated. */
function random(seed: number): () => number {
  let x = seed
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648
    return x / 2147483648
  }
}

describe('the Lua rule and the TypeScript rule', () => {
  it('give the same value, bad level and limit for 600 random answers', async () => {
    const client = redis.client()
    const bounds: LearnBounds = { start: 5, ceiling: 20, floor: 1 }
    const spec = `${bounds.start} ${bounds.ceiling} ${bounds.floor} 60000`
    const key = 'learn-check:{t}:learned'
    const next = random(7)
    let state: LearnedState = initialState(bounds)
    let now = 1_000
    for (let i = 0; i < 600; i++) {
      now += Math.floor(next() * 50)
      const held = 1 + Math.floor(next() * 22)
      const heldMs = Math.floor(next() * 100)
      const fb: Feedback = {
        outcome: next() < 0.2 ? 'throttled' : 'success',
        held,
        saturated: next() < 0.8,
        grantedAt: now - heldMs,
        now,
      }
      const before = enforced(state.value, bounds)
      state = learn(state, bounds, fb)
      const reply = (await client.eval(
        STEP,
        1,
        key,
        spec,
        fb.outcome === 'throttled' ? 't' : 's',
        held,
        fb.saturated ? '1' : '0',
        heldMs,
        now,
      )) as [number, number, string]
      expect([reply[0], reply[1], Number(reply[2])], `step ${i}`).toEqual([
        before,
        enforced(state.value, bounds),
        state.value,
      ])
      const stored = await client.hmget(key, 'b', 'c')
      expect([Number(stored[0]), Number(stored[1])], `step ${i}`).toEqual([state.bad, state.cutAt])
    }
    // the learned key carries its own expiry
    expect(await client.pttl(key)).toBeGreaterThan(0)
  })

  it('make no key for a success that teaches nothing (a key not saturated), and one for the first 429', async () => {
    const client = redis.client()
    const key = 'learn-check:{idle}:learned'
    await client.eval(STEP, 1, key, '5 50 1 60000', 's', 2, '0', 10, 1_000)
    expect(await client.exists(key)).toBe(0)
    await client.eval(STEP, 1, key, '5 50 1 60000', 't', 5, '1', 10, 1_000)
    expect(await client.hget(key, 'v')).toBe('4')
  })
})
