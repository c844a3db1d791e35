import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, GRANTED, settle } from './fake-scripts.js'

// What an uncontended request costs the replica in memory (DESIGN "cost budget"; docs/redis-limiter.md,
// "The replica's side"): a key used one request at a time is forgotten after each request, so every
// collection its state makes up front is made again per request. The queue bounds' bookkeeping (the
// set of pending waiters, the counts per capped app) and the ids to give back are made only when
// needed: a request makes the key's map of waiters and its map of held permits, nothing more.

let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

/** The Maps and Sets the limiter's own code (src/) makes while `fn` runs, by the file that made each. */
async function collectionsMadeBy(fn: () => Promise<void>): Promise<string[]> {
  const RealMap = globalThis.Map
  const RealSet = globalThis.Set
  const made: string[] = []
  const where = (kind: string): void => {
    const frame = (new Error().stack ?? '').split('\n')[3] ?? ''
    const file = /\/src\/(.+?\.ts):/.exec(frame)?.[1]
    if (file !== undefined) made.push(`${kind} ${file}`)
  }
  globalThis.Map = class<K, V> extends RealMap<K, V> {
    constructor(entries?: Iterable<readonly [K, V]> | null) {
      super(entries)
      where('Map')
    }
  }
  globalThis.Set = class<T> extends RealSet<T> {
    constructor(values?: Iterable<T> | null) {
      super(values)
      where('Set')
    }
  }
  try {
    await fn()
  } finally {
    globalThis.Map = RealMap
    globalThis.Set = RealSet
  }
  return made.sort()
}

describe('an uncontended request on a key used one request at a time (fake script runner)', () => {
  it("makes two collections: the key's waiters and its held permits — none for the queue bounds or the ids to give back", async () => {
    const t = (current = fakeShared())
    const request = async (): Promise<void> => {
      const w = t.request(5)
      t.scripts.take('acquire').answer(GRANTED)
      await settle()
      w.permit!.release()
      t.scripts.take('release').answer([1, [], null])
      await settle()
      expect(t.shared.trackedKeys()).toBe(0) // the key is forgotten: the next request makes its state again
    }
    await request() // (what is made once per replica, or per key ever seen, is made here)
    expect(await collectionsMadeBy(request)).toEqual([
      'Map limiter/redis/held-permits.ts',
      'Map limiter/redis/key-semaphore.ts',
    ])
  })

  it('makes the same two for an app with a `maxQueued`: its counts are made only once the key has a second waiter', async () => {
    const t = (current = fakeShared({ fairness: { apps: { batch: { maxQueued: 5 } } } }))
    const request = async (): Promise<void> => {
      const w = t.request(5, { app: 'batch' })
      t.scripts.take('acquire').answer(GRANTED)
      await settle()
      w.permit!.release()
      t.scripts.take('release').answer([1, [], null])
      await settle()
      expect(t.shared.trackedKeys()).toBe(0)
    }
    await request()
    expect(await collectionsMadeBy(request)).toEqual([
      'Map limiter/redis/held-permits.ts',
      'Map limiter/redis/key-semaphore.ts',
    ])
  })
})
