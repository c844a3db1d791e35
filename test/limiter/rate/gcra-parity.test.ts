import { describe, expect, it } from 'vitest'
import { gcraGiveBack, gcraHold, gcraReserve, LUA_GCRA } from '../../../src/limiter/rate/gcra.js'
import { useRedis } from '../../support/use-redis.js'

const redis = useRedis()

// The rule as the Redis script pastes it, called with given times instead of Redis's TIME.
const HARNESS = `${LUA_GCRA}
local out = {}
for i = 1, #ARGV, 8 do
  local tat, now, interval, tolerance, maxwait, hold, holduntil, taken = tonumber(ARGV[i]), tonumber(ARGV[i+1]), tonumber(ARGV[i+2]), tonumber(ARGV[i+3]), tonumber(ARGV[i+4]), tonumber(ARGV[i+5]), tonumber(ARGV[i+6]), tonumber(ARGV[i+7])
  local delay, newtat, granted = gcra_reserve(tat, now, interval, tolerance, maxwait, holduntil)
  out[#out + 1] = delay .. ' ' .. newtat .. ' ' .. granted .. ' ' .. gcra_hold(tat, now + hold, tolerance) .. ' ' .. gcra_give_back(tat, taken, interval)
end
return out
`

describe('the GCRA rule: TypeScript and the Lua the Redis script runs agree', () => {
  it('on the same inputs, for reservations, holds and starts given back', async () => {
    let s = 7
    const rnd = (n: number): number => (s = (s * 1103515245 + 12345) % 2 ** 31) % n
    const cases = Array.from({ length: 400 }, () => {
      const now = 1_700_000_000_000 + rnd(100_000)
      const interval = rnd(3) === 0 ? 0 : 1 + rnd(5000)
      const tat = rnd(4) === 0 ? 0 : now - 50_000 + rnd(100_000)
      return {
        tat,
        now,
        interval,
        tolerance: interval * rnd(10),
        maxwait: rnd(3) === 0 ? 0 : rnd(60_000),
        hold: rnd(10_000),
        holdUntil: rnd(3) === 0 ? 0 : now - 5_000 + rnd(20_000),
        taken: rnd(2) === 0 ? tat : tat + 1,
      }
    })
    const client = redis.client()
    const args = cases.flatMap((c) => [c.tat, c.now, c.interval, c.tolerance, c.maxwait, c.hold, c.holdUntil, c.taken])
    const lua = (await client.eval(HARNESS, 0, ...args)) as string[]
    const ts = cases.map((c) => {
      const p = { windowMs: 0, spaced: 1, intervalMs: c.interval, toleranceMs: c.tolerance }
      const r = gcraReserve(c.tat, c.now, p, c.maxwait, c.holdUntil)
      const held = gcraHold(c.tat, c.now + c.hold, p)
      return `${r.reservation.delayMs} ${r.tat} ${r.reservation.granted ? 1 : 0} ${held} ${gcraGiveBack(c.tat, c.taken, p)}`
    })
    expect(lua).toEqual(ts)
  })
})
