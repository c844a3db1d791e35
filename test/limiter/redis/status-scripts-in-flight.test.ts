import { describe, expect, it } from 'vitest'
import { globalKeysOf } from '../../../src/limiter/redis/keys.js'
import { sharedStatus } from '../../../src/limiter/redis/status/index.js'
import { FakeScripts } from './fake-scripts.js'

/**
 * The status scripts of one `/status` read (or scrape) go 16 at a time (docs/redis-limiter.md, "Status
 * and metrics"): they share the connection with the requests' scripts, which would otherwise wait
 * behind every key of the registry. A fake script runner holds each call until the test answers it,
 * so the count in flight is exact; the real server's side is status-follows-busy-keys.test.ts.
 */
describe('Redis status: scripts in flight', () => {
  it('reads 100 registered keys 16 at a time, every one read once, the busy ones listed in order', async () => {
    const scripts = new FakeScripts()
    const tags = Array.from({ length: 100 }, (_, i) => `t${String(i).padStart(3, '0')}`)
    const status = sharedStatus(scripts, globalKeysOf('p'), { prefix: 'p', idleMs: 1_000, localTags: () => [] })
    const flush = (): Promise<void> => new Promise((r) => setImmediate(r))
    await flush()
    scripts.take('active').answer(tags)
    await flush()

    let read = 0
    let most = 0
    for (;;) {
      const pending = scripts.calls.filter((c) => c.name === 'status')
      most = Math.max(most, pending.length)
      if (pending.length === 0) break
      const call = scripts.take('status')
      // every tenth key busy: one permit held
      call.answer([
        read % 10 === 0 ? 1 : 0,
        0,
        0,
        5,
        `org${String(99 - read).padStart(2, '0')}`,
        'GET /accounts/{id}',
        [],
        null,
        null,
      ])
      read++
      await flush()
    }
    expect(most).toBe(16)
    expect(read).toBe(100)
    const { keys } = await status
    expect(keys.map((k) => k.instance)).toEqual([
      'org09',
      'org19',
      'org29',
      'org39',
      'org49',
      'org59',
      'org69',
      'org79',
      'org89',
      'org99',
    ])
  })
})
