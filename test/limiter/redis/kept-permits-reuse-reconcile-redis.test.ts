import { afterEach, describe, expect, it } from 'vitest'
import type { ScriptDef } from '../../../src/limiter/redis/script.js'
import { useRedis } from '../../support/use-redis.js'
import { needs } from '../../support/tools.js'
import { fakeShared, permitId, settle } from './fake-scripts.js'

// The same interleaving as kept-permits-reuse-reconcile.test.ts, the scripts run by a real redis-server in the order they
// were sent (one connection): reuse renews the kept id, the reconciling sync sent after it removes it as a ghost.
const redis = useRedis()
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

interface Sent {
  def: ScriptDef
  keys: readonly string[]
  args: readonly (string | number)[]
  resolve: (v: unknown) => void
}

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `kept permits: a reuse then a reconciling sync on a real Redis ${needs('redis-server')}`,
  () => {
    it('the request started on the kept permit is still counted by Redis', async () => {
      const client = redis.client()
      const f = (current = fakeShared({ startAt: Date.now(), keepPermits: true }))
      const sent: Sent[] = []
      ;(f.scripts as unknown as { run: unknown }).run = (
        def: ScriptDef,
        keys: readonly string[],
        args: readonly (string | number)[],
      ) => new Promise((resolve) => sent.push({ def, keys, args, resolve }))
      const run = async (name: string) => {
        const i = sent.findIndex((s) => s.def.name === name)
        const s = sent.splice(i, 1)[0]!
        s.resolve(await client.eval(s.def.lua, s.def.numberOfKeys, ...s.keys, ...s.args.map(String)))
        await settle()
        return s
      }
      const first = f.request(1)
      const acq = await run('acquire')
      const holders = acq.keys[0]!
      const id = permitId(first.permit)
      first.permit!.release() // kept
      await settle()
      const next = f.request(1)
      f.shared.stateWentBack()
      const syncing = f.shared.syncAll()
      await settle()
      expect(sent.map((s) => s.def.name)).toEqual(['reuse', 'sync'])
      await run('reuse')
      await run('sync')
      await syncing
      await settle()
      const started = next.permit?.canStart() === true
      const score = await client.zscore(holders, id)
      const zcard = await client.zcard(holders)
      // another replica's acquire now finds the slot free (limit 1) and is granted
      const other = [...acq.args.map(String)]
      other[0] = String(acq.args[0]).replace(/^r1\//, 'r2/')
      other[1] = 'r2'
      const otherReply = (await client.eval(acq.def.lua, acq.def.numberOfKeys, ...acq.keys, ...other)) as number[]
      // this replica's next sync: the reused id is a held permit whose lease cannot have run out, missing -> "rolled
      // back" -> recount: ZADD again, whatever the limit
      const syncing2 = f.shared.syncAll()
      await settle()
      await run('sync')
      await syncing2
      const zcardAfter = await client.zcard(holders)
      next.permit?.release()
      client.disconnect()
      expect(started && score === null).toBe(false) // a request started on a permit Redis does not count
      expect({ started, zcard, otherGranted: otherReply[0] === 1, zcardAfter }).toEqual({
        started: true,
        zcard: 1,
        otherGranted: false,
        zcardAfter: 1,
      })
    })
  },
)
