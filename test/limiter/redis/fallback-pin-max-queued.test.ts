import { describe, expect, it } from 'vitest'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import { Deadlines } from '../../../src/limiter/deadlines.js'
import { Fallback } from '../../../src/limiter/redis/fallback.js'
import { SluicePermit, Ticket, type Grant } from '../../../src/limiter/redis/ticket.js'
import type { Permit } from '../../../src/limiter/types.js'
import { key } from './helpers.js'

// Fair share between apps and the `local` fallback: entering `local`, every Redis permit still in
// flight takes a local slot first (a pin), "so the fallback does not grant their slots a second
// time". Pins are exempt from maxHeld (`uncapped`) and must be from the app's maxQueued too: else,
// past it, the in-process limiter refuses the pin (QueueFullError, swallowed as "unpinned before
// its turn"), the permit runs upstream with no local slot, and the fallback grants that slot to a
// new request.

const tick = (): Promise<void> => new Promise((r) => setImmediate(r))

describe('local fallback: pins of Redis permits in flight and maxQueued', () => {
  it('every Redis permit in flight is pinned, whatever its app’s maxQueued: no local grant while they run', async () => {
    const fairness = new FairShare(fairnessSettingsSchema.parse({ apps: { batch: { maxQueued: 1 } } }))
    // 3 replicas share limit 3: this replica's local share is 1
    const fallback = new Fallback(
      'local',
      {
        makePermit: (k, limit, grant, waitedMs, app) =>
          new SluicePermit(
            k,
            limit,
            grant,
            waitedMs,
            (p) => fallback.release(p),
            () => true,
            app,
          ),
        shareOf: () => 1,
        grantedAfterRecovery: () => {},
        redisIsBack: () => false,
      },
      fairness,
    )
    const redisPermit = (n: number): SluicePermit => {
      const grant: Grant = { kind: 'redis', tag: 't', id: `r1/${n}` }
      return new SluicePermit(
        key,
        { limit: 3 },
        grant,
        0,
        () => {},
        () => true,
        'batch',
      )
    }
    // this replica held three Redis permits of `batch` when Redis went away
    const [p1, p2, p3] = [redisPermit(1), redisPermit(2), redisPermit(3)]
    fallback.pinAll([p1, p2, p3])
    await tick()
    // the first two finish; p3 is still in flight upstream
    fallback.unpin(p1)
    await tick()
    fallback.unpin(p2)
    await tick()
    // a new request now, in local mode: the only local slot is p3's
    let granted: Permit | undefined
    const ticket = new Ticket(
      key,
      { limit: 3, maxQueue: 100, deadline: Date.now() + 60_000, app: 'web' },
      (p) => (granted = p),
      () => {},
      () => {},
      new Deadlines(),
    )
    fallback.serve(ticket)
    await tick()
    await tick()
    expect(granted).toBeUndefined()
    ticket.fail(new Error('test over'))
    fallback.unpinAll()
    await fallback.close()
  })
})
