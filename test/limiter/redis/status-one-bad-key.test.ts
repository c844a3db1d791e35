import { describe, expect, it } from 'vitest'
import { globalKeysOf } from '../../../src/limiter/redis/keys.js'
import { sharedStatus, type SharedStatus } from '../../../src/limiter/redis/status/index.js'
import { FakeScripts, turn } from './fake-scripts.js'

// The status scripts go 16 at a time (src/limiter/redis/status/index.ts). A fake runner answers them
// in the order the test picks: which scripts are sent after a failure is a race on a real connection.
const TAGS = Array.from({ length: 40 }, (_, i) => `t${String(i).padStart(2, '0')}`)
const BUSY = [1, 0, 0, 5, 'org', 'GET /accounts/{id}', [], null, null]

function start(): { scripts: FakeScripts; outcome: () => SharedStatus | Error | undefined } {
  const scripts = new FakeScripts()
  let outcome: SharedStatus | Error | undefined
  sharedStatus(scripts, globalKeysOf('p'), { prefix: 'p', idleMs: 1_000, localTags: () => [] }).then(
    (s) => (outcome = s),
    (e: unknown) => (outcome = e instanceof Error ? e : new Error(String(e))),
  )
  return { scripts, outcome: () => outcome }
}

const pendingStatus = (scripts: FakeScripts): number => scripts.calls.filter((c) => c.name === 'status').length

describe('redis status: one broken key, or Redis failing, during a read', () => {
  it('a key whose script Redis refuses (WRONGTYPE) is left out and named; every other busy key is listed', async () => {
    const { scripts, outcome } = start()
    await turn()
    scripts.take('active').answer(TAGS)
    await turn()
    const wrongType = Object.assign(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'), {
      name: 'ReplyError',
    })
    scripts.take('status').fail(wrongType)
    await turn()
    while (pendingStatus(scripts) > 0) {
      scripts.take('status').answer(BUSY)
      await turn()
    }
    const got = outcome()
    expect(got).not.toBeInstanceOf(Error)
    expect((got as SharedStatus).keys).toHaveLength(39)
    expect((got as SharedStatus).broken).toEqual({ count: 1, tags: ['t00'] })
  })

  it('a failure that is not about one key (a timeout, a closed connection) rejects, and no script is sent after it', async () => {
    const { scripts, outcome } = start()
    await turn()
    scripts.take('active').answer(TAGS)
    await turn()
    expect(pendingStatus(scripts)).toBe(16)
    scripts.take('status').fail(new Error('Redis did not answer the status script within 1000 ms'))
    await turn()
    expect(outcome()).toBeInstanceOf(Error)
    let answeredAfterFailure = 0
    while (pendingStatus(scripts) > 0) {
      answeredAfterFailure++
      scripts.take('status').answer(BUSY)
      await turn()
    }
    // the 15 already on their way, none taken from the rest of the registry
    expect(answeredAfterFailure).toBe(15)
  })
})
