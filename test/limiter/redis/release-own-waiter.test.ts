import { describe, expect, it } from 'vitest'
import { grantChannelPrefix } from '../../../src/limiter/redis/keys.js'
import { release } from '../../../src/limiter/redis/release/index.js'
import { LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// A release that grants a waiter of the releasing replica itself (docs/redis-limiter.md, "Scripts"):
// the reply lists it, with the head a limit-1 message would name, so no message is published to the
// replica's own channel, and its liveness is not read (the replica is running the script). Waiters
// of other replicas still hear by message, "<id> <head>" at limit 1.

const on = scriptsOnRedis('own')

const { heardBy } = on

const releaseBy = (replicaId: string, ids: string[]) =>
  release(on.scripts, on.keys, {
    ids,
    limit: '1',
    leaseMs: LEASE_MS,
    idleMs: 3 * LEASE_MS,
    channelPrefix: grantChannelPrefix(on.prefix),
    replicaId,
    wantHead: false,
  })

describe('redis scripts: a release granting the releasing replica its own waiter', () => {
  it('publishes nothing to it; the reply grants and names the next head', async () => {
    const holder = await on.enter({ app: 'a', replica: 'r1' })
    const mine = await on.enter({ app: 'a', replica: 'r1' })
    const next = await on.enter({ app: 'a', replica: 'r2' })
    let reply: Awaited<ReturnType<typeof releaseBy>> | undefined
    const heard = await heardBy('r1', async () => (reply = await releaseBy('r1', [holder.id])))
    expect(heard).toEqual([])
    expect(reply?.granted).toEqual([mine.id])
    expect(reply?.head).toBe(next.id)
    expect(await on.client.zrange(on.keys.holders, 0, -1)).toEqual([mine.id])
  })

  it("another replica's waiter still hears of its grant, with the next head", async () => {
    const holder = await on.enter({ app: 'a', replica: 'r1' })
    const theirs = await on.enter({ app: 'a', replica: 'r2' })
    const next = await on.enter({ app: 'a', replica: 'r1' })
    const heard = await heardBy('r2', () => releaseBy('r1', [holder.id]))
    expect(heard).toEqual([`${theirs.id} ${next.id}`])
  })

  it("does not read the releasing replica's liveness: its waiter is granted even when Redis holds none for it", async () => {
    const holder = await on.enter({ app: 'a', replica: 'r1' })
    const mine = await on.enter({ app: 'a', replica: 'r1' })
    // r1's liveness gone (as if expired): a release by another replica would drop r1's waiter as dead
    await on.client.hdel(on.keys.meta, '@r1')
    expect((await releaseBy('r1', [holder.id])).granted).toEqual([mine.id])
  })

  it('drops a waiter of another replica whose liveness is gone (it is read for every other replica)', async () => {
    const holder = await on.enter({ app: 'a', replica: 'r1' })
    const dead = await on.enter({ app: 'a', replica: 'r2' })
    const live = await on.enter({ app: 'a', replica: 'r1' }) // behind the dead waiter (FIFO within an app)
    await on.client.hdel(on.keys.meta, '@r2')
    expect((await releaseBy('r1', [holder.id])).granted).toEqual([live.id])
    expect(await on.client.zscore(on.keys.queue, dead.id)).toBeNull()
  })
})

describe('redis scripts: a meta hash made anew by a grant', () => {
  it('gets its expiry (Redis lost it: the grant writes V and the count into a new hash)', async () => {
    const holder = await on.enter({ app: 'a', replica: 'r1' })
    const mine = await on.enter({ app: 'a', replica: 'r1' })
    await on.client.del(on.keys.meta)
    expect((await releaseBy('r1', [holder.id])).granted).toEqual([mine.id])
    expect(await on.client.hget(on.keys.meta, 'v')).toBe('0')
    expect(await on.client.pttl(on.keys.meta)).toBeGreaterThan(0)
  })
})
