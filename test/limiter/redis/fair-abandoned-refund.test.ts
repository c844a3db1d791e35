import { describe, expect, it } from 'vitest'
import { appOfId } from '../../../src/limiter/redis/waiter-id.js'
import { scriptsOnRedis } from './scripts-on-redis.js'

// Fair share between apps, the Redis half of test/limiter/memory/fair-abandoned-refund.test.ts:
// waiters that give up (deadline, abort: withdrawn by the release script) must not leave their app
// charged, or an impatient app falls behind every app that kept its waiters.

const { enter, leave } = scriptsOnRedis('refund')

describe('redis scripts: waiters that gave up do not keep their app charged', () => {
  it('an app whose waiters all gave up gets its turn among the first once it is backlogged again', async () => {
    const holder = await enter({ app: 'b' })
    expect(holder.kind).toBe('granted')
    const abandoned = []
    for (let i = 0; i < 20; i++) abandoned.push((await enter({ app: 'a' })).id)
    for (const id of abandoned) await leave([id]) // each withdrawn on its own, oldest first (timeouts)
    for (let i = 0; i < 20; i++) await enter({ app: 'b' })
    await enter({ app: 'a' })
    const order: string[] = []
    let current = holder.id
    for (let i = 0; i < 4; i++) {
      current = (await leave([current]))[0]!
      order.push(appOfId(current)!)
    }
    expect(order).toContain('a')
  })
})
