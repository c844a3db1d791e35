import { describe, expect, it } from 'vitest'
import { QueueFullError } from '../../../src/limiter/errors.js'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import { createMemoryLimiter, type MemoryLimiter } from '../../../src/limiter/memory/index.js'
import type { Permit } from '../../../src/limiter/types.js'

// Fair share between apps in the in-process backend (README "Fair share between apps"): grants are
// decided synchronously on release, so the order is exact — no timing in these tests.

const key = { instance: 'org1', endpoint: 'POST /accounts/search' }
const tick = (): Promise<void> => new Promise((r) => setImmediate(r))

function limiterWith(fairness: unknown = {}): MemoryLimiter {
  return createMemoryLimiter({ fairness: new FairShare(fairnessSettingsSchema.parse(fairness)) })
}

interface Granted {
  readonly label: string
  readonly permit: Permit
}

/** Queues `label`'s request; its grant is recorded in `log` in the order grants happen. */
function request(
  limiter: MemoryLimiter,
  log: Granted[],
  label: string,
  o: { limit?: number; arrivedAt?: number } = {},
): Promise<Permit> {
  const app = label.split('#')[0]
  const p = limiter.acquire(key, {
    limit: o.limit ?? 1,
    deadline: Date.now() + 60_000,
    maxQueue: 10_000,
    app,
    arrivedAt: o.arrivedAt,
  })
  return p.then((permit) => {
    log.push({ label, permit })
    return permit
  })
}

/** Releases the oldest permit held, one at a time, until `count` more were granted; returns the labels in grant order. */
async function serve(log: Granted[], count: number): Promise<string[]> {
  const start = log.length
  let next = start - 1
  while (log.length < start + count) {
    log[next]!.permit.release()
    next++
    await tick()
  }
  return log.slice(start, start + count).map((g) => g.label)
}

const appOf = (label: string): string => label.split('#')[0]!
/** a wait left pending when the test drains the limiter (its rejection is expected) */
const bg = (p: Promise<unknown>): void => void p.catch(() => {})

describe('memory limiter: fair share between apps', () => {
  it('weights 3:1 over a long backlog: 3 grants to 1 in every round, FIFO within each app', async () => {
    const limiter = limiterWith({ apps: { heavy: { weight: 3 }, light: { weight: 1 } } })
    const log: Granted[] = []
    await request(limiter, log, 'first#0')
    for (let i = 0; i < 60; i++) bg(request(limiter, log, `heavy#${i}`))
    for (let i = 0; i < 60; i++) bg(request(limiter, log, `light#${i}`))
    const order = await serve(log, 80)
    for (let round = 0; round < 80; round += 4) {
      const apps = order
        .slice(round, round + 4)
        .map(appOf)
        .sort()
      expect(apps, `round ${round / 4}: ${order.slice(round, round + 4).join(' ')}`).toEqual([
        'heavy',
        'heavy',
        'heavy',
        'light',
      ])
    }
    for (const app of ['heavy', 'light']) {
      const mine = order.filter((l) => appOf(l) === app).map((l) => Number(l.split('#')[1]))
      expect(mine).toEqual([...mine].sort((a, b) => a - b))
    }
    limiter.drain()
  })

  it("a new app's first waiter goes ahead of a flooding app's backlog", async () => {
    const limiter = limiterWith()
    const log: Granted[] = []
    await request(limiter, log, 'batch#0')
    for (let i = 1; i <= 24; i++) bg(request(limiter, log, `batch#${i}`))
    await serve(log, 5) // the batch app is being served from its backlog
    bg(request(limiter, log, 'web#0'))
    // its start tag is V, the batch app's next waiter's is V + 1
    expect(await serve(log, 2)).toEqual(['web#0', 'batch#6'])
    limiter.drain()
  })

  it('equal weights alternate between two busy apps; a request sent back by a 429 goes to the head', async () => {
    const limiter = limiterWith()
    const log: Granted[] = []
    await request(limiter, log, 'a#0')
    for (let i = 1; i <= 4; i++) {
      bg(request(limiter, log, `a#${i}`))
      bg(request(limiter, log, `b#${i}`))
    }
    expect(await serve(log, 2)).toEqual(['a#1', 'b#1'])
    bg(request(limiter, log, 'b#retried', { arrivedAt: Date.now() - 500 }))
    bg(request(limiter, log, 'a#retried', { arrivedAt: Date.now() - 900 }))
    // re-queued: ahead of every new waiter, the older first
    expect(await serve(log, 4)).toEqual(['a#retried', 'b#retried', 'a#2', 'b#2'])
    limiter.drain()
  })

  it('a batch app gets a share 1 / interactiveBoost of an interactive one, and is never starved', async () => {
    const limiter = limiterWith({ interactiveBoost: 4, apps: { nightly: { class: 'batch' } } })
    const log: Granted[] = []
    await request(limiter, log, 'first#0')
    for (let i = 0; i < 40; i++) bg(request(limiter, log, `web#${i}`))
    for (let i = 0; i < 40; i++) bg(request(limiter, log, `nightly#${i}`))
    const order = await serve(log, 50)
    expect(order.filter((l) => appOf(l) === 'nightly')).toHaveLength(10)
    for (let round = 0; round < 50; round += 5)
      expect(order.slice(round, round + 5).filter((l) => appOf(l) === 'nightly')).toHaveLength(1)
    limiter.drain()
  })

  it('maxHeld: an app at its cap waits while other apps are served; it gets its turn back once under it', async () => {
    const limiter = limiterWith({ apps: { batch: { maxHeld: 1, maxQueued: 1000 } } })
    const log: Granted[] = []
    const b0 = await request(limiter, log, 'batch#0', { limit: 3 })
    const pending = [request(limiter, log, 'batch#1', { limit: 3 }), request(limiter, log, 'batch#2', { limit: 3 })]
    await tick()
    expect(log.map((g) => g.label)).toEqual(['batch#0']) // two slots free, but batch holds its cap
    bg(request(limiter, log, 'web#0', { limit: 3 }))
    bg(request(limiter, log, 'web#1', { limit: 3 }))
    await tick()
    expect(log.map((g) => g.label)).toEqual(['batch#0', 'web#0', 'web#1'])
    const status = (await limiter.status()).keys[0]!
    expect(status.apps).toEqual([
      { app: 'batch', held: 1, queued: 2 },
      { app: 'web', held: 2, queued: 0 },
    ])
    b0.release()
    await tick()
    expect(log.map((g) => g.label)).toEqual(['batch#0', 'web#0', 'web#1', 'batch#1'])
    for (const g of log.slice(1)) g.permit.release()
    ;(await pending[1]!).release()
    expect((await limiter.status()).keys).toEqual([])
  })

  it("maxQueued: an app's waiters past its cap get the queue-full answer; other apps still queue", async () => {
    const limiter = limiterWith({ apps: { batch: { maxQueued: 2 } } })
    const log: Granted[] = []
    await request(limiter, log, 'batch#0')
    const queued = [request(limiter, log, 'batch#1'), request(limiter, log, 'batch#2')]
    const refused = request(limiter, log, 'batch#3')
    await expect(refused).rejects.toBeInstanceOf(QueueFullError)
    await expect(refused).rejects.toThrow(
      'The queue for POST /accounts/search (instance org1) for app batch is full (2 waiting); try again later',
    )
    const web = request(limiter, log, 'web#0')
    expect((await limiter.status()).keys[0]).toMatchObject({ queued: 3 })
    limiter.drain()
    await Promise.allSettled([...queued, web])
  })
})
