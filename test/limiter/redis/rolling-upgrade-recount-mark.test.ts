import { describe, expect, it } from 'vitest'
import { acquire } from '../../../src/limiter/redis/acquire/index.js'
import { grantChannelPrefix } from '../../../src/limiter/redis/keys.js'
import { sync } from '../../../src/limiter/redis/sync/index.js'
import { waiterId } from '../../../src/limiter/redis/waiter-id.js'
import { PREVIOUS_SYNC_LUA } from './fixtures/sync-dcbef30.js'
import { LEASE_MS, scriptsOnRedis } from './scripts-on-redis.js'

// A rolling upgrade to the release whose acquire leaves the data-loss mark `!<replica>` for its own
// sync (docs/redis-limiter.md, "Failure modes"; docs/deploy.md): an old replica and a new one share a
// semaphore when Redis loses its data. The old scripts never write a mark and never read one (each
// replica's sync reads only its own); the old sync's sweep deletes only the fields it knows (`@`,
// `f:`, `n:`, `w:`), so a new replica's mark outlives it until the new replica's own sync reads it.
// Each replica counts its permits again as its own release would: the old one as before the mark.

const on = scriptsOnRedis('mark-upgrade')
const common = () => ({
  leaseMs: LEASE_MS,
  liveMs: LEASE_MS,
  idleMs: 3 * LEASE_MS,
  instance: 'org1',
  endpoint: 'POST /accounts/search',
  channelPrefix: grantChannelPrefix(on.prefix),
})
let sequence = 0
const idOf = (replicaId: string): string =>
  waiterId({ replicaId, sequence: ++sequence, arrivedAt: Date.now(), maxHeld: Infinity, app: 'web' })

const newAcquire = async (replicaId: string, announce: '1' | '2') => {
  const id = idOf(replicaId)
  const reply = await acquire(on.scripts, on.keys, {
    ...common(),
    id,
    replicaId,
    limit: '3',
    ageMs: 0,
    full: false,
    announce: true,
    announcedBefore: announce === '2',
    wantHead: false,
    cost: 1,
  })
  return { id, ...reply }
}

/** the previous release's sync of replica `replicaId`, with the sweep (every 30th sync) */
async function oldSync(replicaId: string, held: string[]): Promise<{ lost: string[]; recounted: string[] }> {
  const { holders, queue, meta, learned } = on.keys
  const c = common()
  const args = [
    replicaId,
    '3',
    c.leaseMs,
    c.liveMs,
    c.idleMs,
    c.channelPrefix,
    c.instance,
    c.endpoint,
    '1',
    '0',
    held.length,
    ...held,
    0,
    0,
  ]
  const reply = (await on.client.eval(PREVIOUS_SYNC_LUA, 4, holders, queue, meta, learned, ...args)) as [
    number,
    string[],
    string[],
    string[],
    string | null,
    string[],
  ]
  return { lost: reply[1], recounted: reply[5] }
}

describe('redis scripts: the data-loss mark during a rolling upgrade', () => {
  it("an old replica's sync (sweep included) leaves a new replica's mark; each counts its own permits again", async () => {
    const fresh = await newAcquire('new1', '1')
    const old = idOf('old1')
    await on.client.zadd(on.keys.holders, String(Date.now() + LEASE_MS), old) // the old replica's permit (its acquire is the old one's business)
    await on.client.flushall() // Redis loses its data
    const next = await newAcquire('new1', '2') // the new replica announces itself again: liveness back, and its mark
    expect(next.forgot).toBe(true)
    expect(await oldSync('old1', [old])).toEqual({ lost: [], recounted: [old] }) // its own liveness gone: counted again, as before
    expect(await on.client.hexists(on.keys.meta, '!new1')).toBe(1) // untouched by the old sweep
    const reply = await sync(on.scripts, on.keys, {
      ...common(),
      replicaId: 'new1',
      limit: '3',
      held: [fresh.id],
      waiting: [],
      drop: [],
      sweep: true,
      recount: false,
      keep: [next.id], // its acquire's reply not read yet (on its way): a reconciliation keeps it
    })
    expect({
      lost: reply.lost,
      recounted: reply.recounted,
      mark: await on.client.hexists(on.keys.meta, '!new1'),
    }).toEqual({ lost: [], recounted: [fresh.id], mark: 0 })
    expect((await on.client.zrange(on.keys.holders, 0, -1)).sort()).toEqual([fresh.id, next.id, old].sort())
  })
})
