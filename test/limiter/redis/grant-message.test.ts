import { describe, expect, it } from 'vitest'
import { luaGrantMessage, luaStaleHeadMessage, parseGrantMessage } from '../../../src/limiter/redis/grant-message.js'
import { LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// The grant channel's messages are written once (src/limiter/redis/grant-message.ts): the Lua that
// builds them, pasted into the scripts, and the parser RedisLimiter reads them with. What the Lua
// formats on a real redis-server parses back to the same fields — the expressions alone, and the
// messages the acquire and release scripts publish.

const on = scriptsOnRedis('grant-message')

/** Ids of every form a replica may see: the previous release's `<replica>/<sequence>`, and the current one with and without a cap. */
const IDS = ['r1/5', 'host-1.a1b2c3d4/0mwxm9six~00000001:3:app-a', 'r-2.ff00ff00/0mwxm9six~0000000a::default']

const { heardBy } = on

describe('grant messages: what the scripts format parses back to the same fields', () => {
  it('a grant, with and without the head left in the queue (the Lua expression run by redis-server)', async () => {
    const lua = `local head = ARGV[2] or false\nreturn ${luaGrantMessage('ARGV[1]', 'head')}`
    for (const id of IDS) {
      for (const head of [undefined, ...IDS]) {
        const text = String(await on.client.eval(lua, 0, id, ...(head === undefined ? [] : [head])))
        expect(parseGrantMessage(text)).toEqual({ kind: 'granted', id, head })
      }
    }
  })

  it('a stale head (the Lua expression run by redis-server)', async () => {
    const text = String(await on.client.eval(`return ${luaStaleHeadMessage('ARGV[1]')}`, 0, 'a1b2c3d4e5f6a7b8c9d0'))
    expect(parseGrantMessage(text)).toEqual({ kind: 'stale-head', tag: 'a1b2c3d4e5f6a7b8c9d0' })
  })

  it('what the release script publishes to a waiter it grants: its id and, at limit 1, the next head', async () => {
    const holder = await on.enter({ app: 'a', replica: 'r1' })
    const granted = await on.enter({ app: 'a', replica: 'r2' })
    const next = await on.enter({ app: 'b', replica: 'r3' })
    const heard = await heardBy('r2', () => on.leave([holder.id]))
    expect(heard.map(parseGrantMessage)).toEqual([{ kind: 'granted', id: granted.id, head: next.id }])
    // the last waiter granted: nobody left to name
    const last = await heardBy('r3', () => on.leave([granted.id]))
    expect(last.map(parseGrantMessage)).toEqual([{ kind: 'granted', id: next.id, head: undefined }])
  })

  it("what the acquire script publishes to a holder's replica when a waiter lands ahead of the head: the semaphore's tag", async () => {
    await on.enter({ app: 'a', replica: 'r1' }) // the holder
    await on.enter({ app: 'a', replica: 'r2' }) // the head
    // re-queued by its age: placed ahead of the head
    const heard = await heardBy('r1', () => on.enter({ app: 'a', replica: 'r3', age: LEASE_MS }))
    expect(heard.map(parseGrantMessage)).toEqual([{ kind: 'stale-head', tag: on.keys.tag }])
  })
})
