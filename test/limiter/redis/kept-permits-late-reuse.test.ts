import { afterEach, describe, expect, it } from 'vitest'
import { useRedis } from '../../support/use-redis.js'
import { needs } from '../../support/tools.js'
import { fakeShared, LEASE_MS, settle, turn } from './fake-scripts.js'
import { key, opts, redisLimiter, scriptCallsOf, testSettings } from './helpers.js'

// LIMITER-CHECKLIST "A stall longer than the lease": a kept permit's `reuse` renews its lease when Redis runs it, but
// its reply may be read long after (the replica frozen: GC, SIGSTOP, a starved pod). Read after the lease it renewed
// may have run out, the permit cannot start a request: another replica may hold the slot Redis purged. The soak found it
// (a limit-1 key two at once, a replica waking from a 2.6 s freeze with a reuse's reply in its socket).
const redis = useRedis()
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('kept permits: a reuse answered after a stall (fake script runner)', () => {
  it('a reply read after the lease it renewed may have ended starts nothing: the id goes back, the request waits by its age', async () => {
    const { scripts, request, advance } = (current = fakeShared({ keepPermits: true }))
    const first = request(1)
    scripts.take('acquire').answer([1, 1, 0, 1]) // granted, the queue empty: may be kept
    await settle()
    first.permit!.release() // kept
    await settle()
    const next = request(1) // takes the kept permit: its reuse goes out
    const reuse = scripts.take('reuse')
    advance(2 * LEASE_MS) // frozen with the reply on its way
    reuse.answer([1, 1]) // Redis renewed it when it ran, long ago
    await settle()
    await turn()
    expect(next.permit).toBeUndefined() // never started on a lease that may have ended
    expect(scripts.names().sort()).toEqual(['acquire', 'release'])
    const again = scripts.take('acquire')
    expect(Number(again.args[6])).toBeGreaterThan(0) // by its age
    again.answer([1, 0, 0, 1])
    await settle()
    expect(next.permit).toBeDefined()
  })

  it('a reply read in time starts its request at once (no script more)', async () => {
    const { scripts, request, advance } = (current = fakeShared({ keepPermits: true }))
    const first = request(1)
    scripts.take('acquire').answer([1, 1, 0, 1])
    await settle()
    first.permit!.release()
    await settle()
    const next = request(1)
    const reuse = scripts.take('reuse')
    advance(10)
    reuse.answer([1, 1])
    await settle()
    expect(next.permit).toBeDefined()
    expect(scripts.names()).toEqual([])
  })
})

/** Blocks the event loop for `ms` (a long GC, a CPU-starved pod): no timer fires, no socket is read. */
function stall(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

// counts every script the server ran: only meaningful on a server of the test's own
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `kept permits: a reuse answered after a stall, on a real Redis ${needs('redis-server')}`,
  () => {
    it('the replica frozen with the reuse’s reply in its socket starts nothing on it: released and acquired anew', async () => {
      const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 1_500 })
      const limiter = await redisLimiter(settings, { keepForMs: 60_000 })
      const inspect = redis.client()
      ;(await limiter.acquire(key, opts(1))).release() // announced, scripts loaded
      ;(await limiter.acquire(key, opts(1))).release() // granted with the queue empty: kept (window L/3 = 500 ms)
      const before = await scriptCallsOf(inspect)
      const next = limiter.acquire(key, opts(1)) // its reuse is written now; Redis renews the lease for 1.5 s
      stall(2_000) // the reply waits in the socket past that lease
      const permit = await next
      // the reuse, then its id given back and the request's own acquire: never started on the lease read too late
      expect(await scriptCallsOf(inspect)).toBeGreaterThanOrEqual(before + 3)
      permit.release()
      inspect.disconnect()
      await limiter.close()
    })
  },
)
