import { describe, expect, it } from 'vitest'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'

const key = { instance: 'org1', endpoint: 'POST /accounts/search' }
const base = { limit: 1, maxQueue: 1000 }

describe('memory limiter: bounded waits', () => {
  it('rejects past the queue length with SLUICE_QUEUE_FULL', async () => {
    const limiter = createMemoryLimiter()
    const held = await limiter.acquire(key, { ...base, deadline: Date.now() + 10_000 })
    const waiting = limiter.acquire(key, { ...base, maxQueue: 1, deadline: Date.now() + 10_000 })
    await expect(limiter.acquire(key, { ...base, maxQueue: 1, deadline: Date.now() + 10_000 })).rejects.toMatchObject({
      code: 'SLUICE_QUEUE_FULL',
      statusCode: 503,
    })
    held.release()
    ;(await waiting).release()
  })

  it('rejects at the deadline with SLUICE_QUEUE_TIMEOUT and leaves the queue', async () => {
    const limiter = createMemoryLimiter()
    const held = await limiter.acquire(key, { ...base, deadline: Date.now() + 10_000 })
    await expect(limiter.acquire(key, { ...base, deadline: Date.now() + 50 })).rejects.toMatchObject({
      code: 'SLUICE_QUEUE_TIMEOUT',
      statusCode: 503,
    })
    expect((await limiter.status()).keys[0]).toMatchObject({ inFlight: 1, queued: 0 })
    held.release()
    expect((await limiter.status()).keys).toEqual([])
  })

  it('an aborted wait leaves the queue at once and takes no permit', async () => {
    const limiter = createMemoryLimiter()
    const held = await limiter.acquire(key, { ...base, deadline: Date.now() + 10_000 })
    const ac = new AbortController()
    const waiting = limiter.acquire(key, { ...base, deadline: Date.now() + 10_000, signal: ac.signal })
    expect((await limiter.status()).keys[0]).toMatchObject({ queued: 1 })
    ac.abort()
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' })
    expect((await limiter.status()).keys[0]).toMatchObject({ inFlight: 1, queued: 0 })
    held.release()
    expect((await limiter.status()).keys).toEqual([])
  })

  it('drain answers every waiter with SLUICE_UNAVAILABLE and refuses new acquires; held permits still release', async () => {
    const limiter = createMemoryLimiter()
    const held = await limiter.acquire(key, { ...base, deadline: Date.now() + 10_000 })
    const waiters = [1, 2, 3].map(() => limiter.acquire(key, { ...base, deadline: Date.now() + 10_000 }))
    limiter.drain()
    for (const w of waiters) await expect(w).rejects.toMatchObject({ code: 'SLUICE_UNAVAILABLE', statusCode: 503 })
    await expect(limiter.acquire(key, { ...base, deadline: Date.now() + 10_000 })).rejects.toMatchObject({
      code: 'SLUICE_UNAVAILABLE',
    })
    expect(limiter.ready()).toBe(false)
    held.release()
    expect((await limiter.status()).keys).toEqual([])
  })
})
