import { describe, expect, it } from 'vitest'
import { MemoryRateGate } from '../../../src/limiter/rate/gate.js'
import { gcraParams } from '../../../src/limiter/rate/gcra.js'
import { LUA_LOG, logGiveBack, logReserve } from '../../../src/limiter/rate/sliding-log.js'
import { useRedis } from '../../support/use-redis.js'

const redis = useRedis()
const key = { instance: 'org1', endpoint: 'GET /contacts' }

describe('a rate whose burst is its count: a sliding log (N at once, N again a window later)', () => {
  it('in process: 4 per second, burst 4: four at once, four more a window later, then a window after those', () => {
    let now = 0
    const gate = new MemoryRateGate(() => now)
    const params = gcraParams({ requests: 4, windowMs: 1000, burst: 4 })
    const delays = Array.from({ length: 10 }, () => gate.reserve(key, params, Infinity).delayMs)
    expect(delays).toEqual([0, 0, 0, 0, 1000, 1000, 1000, 1000, 2000, 2000])
    now = 5_000
    // a start taken and given back leaves the log: the next one takes its place
    const taken = gate.reserve(key, params, 0)
    expect(taken.granted).toBe(true)
    gate.giveBack(key, params, taken.tat!)
    for (let i = 0; i < 4; i++) expect(gate.reserve(key, params, 0).granted).toBe(true)
    expect(gate.reserve(key, params, 0)).toMatchObject({ granted: false, delayMs: 1000 })
  })

  it('the Lua the Redis script runs agrees with the TypeScript on the same inputs', async () => {
    let s = 11
    const rnd = (n: number): number => (s = (s * 1103515245 + 12345) % 2 ** 31) % n
    const cases = Array.from({ length: 300 }, () => {
      const now = 1_700_000_000_000 + rnd(100_000)
      const window = 1 + rnd(5000)
      const n = 1 + rnd(6)
      const log = Array.from({ length: rnd(8) }, () => now - window - 100 + rnd(window * 2)).sort((a, b) => a - b)
      return { now, window, n, log, maxwait: rnd(3) === 0 ? 0 : rnd(10_000), hold: rnd(2) === 0 ? 0 : now + rnd(3000) }
    })
    const harness = `${LUA_LOG}
local out = {}
local i = 1
while i <= #ARGV do
  local now, window, n, maxwait, hold, text = tonumber(ARGV[i]), tonumber(ARGV[i+1]), tonumber(ARGV[i+2]), tonumber(ARGV[i+3]), tonumber(ARGV[i+4]), ARGV[i+5]
  if text == '' then text = nil end
  local live = log_parse(text, now, window)
  local delay, kept, granted, start = log_reserve(live, now, window, n, maxwait, hold)
  local text = table.concat(kept, ',')
  local back = granted == 1 and log_give_back(kept, start) or kept
  out[#out + 1] = delay .. ' ' .. granted .. ' ' .. start .. ' ' .. text .. ' ' .. table.concat(back, ',')
  i = i + 6
end
return out
`
    const args = cases.flatMap((c) => [c.now, c.window, c.n, c.maxwait, c.hold, c.log.join(',')])
    const lua = (await redis.client().eval(harness, 0, ...args)) as string[]
    const ts = cases.map((c) => {
      const p = { windowMs: c.window, spaced: c.n, intervalMs: 1, toleranceMs: 0, log: c.n }
      const r = logReserve(c.log, c.now, p, c.maxwait, c.hold)
      const start = c.now + r.reservation.delayMs
      const back = r.reservation.granted ? logGiveBack(r.log, start) : r.log
      return `${r.reservation.delayMs} ${r.reservation.granted ? 1 : 0} ${start} ${r.log.join(',')} ${back.join(',')}`
    })
    expect(lua).toEqual(ts)
  })
})
