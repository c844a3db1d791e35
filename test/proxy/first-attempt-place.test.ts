import { request } from 'node:http'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ACQUIRE_LUA } from '../../src/limiter/redis/acquire/lua.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { uniquePrefix } from '../support/redis.js'
import { basicAuth, startSim, type Sim } from '../support/sim.js'
import { useRedis } from '../support/use-redis.js'
import { createHash } from 'node:crypto'

const redis = useRedis()
let sim: Sim
let proxy: RunningProxy
beforeAll(async () => {
  sim = await startSim({ latencyMs: 1 })
  proxy = await startProxy({ upstream: sim.apiUrl, redis: { url: redis.url, keyPrefix: uniquePrefix('first') } })
})
afterAll(async () => {
  await proxy?.close()
  await sim?.close()
})

/** The age (ms) each acquire script sent from this process asked Redis to place its waiter by. */
function recordAcquireAges(): { readonly ages: number[]; stop(): void } {
  const sha = createHash('sha1').update(ACQUIRE_LUA).digest('hex')
  const proto = Redis.prototype as unknown as {
    sendCommand: (command: { name: string; args: unknown[] }, ...rest: unknown[]) => unknown
  }
  const original = proto.sendCommand
  const ages: number[] = []
  proto.sendCommand = function (this: Redis, command, ...rest) {
    const args = command.args.map(String)
    // EVALSHA sha 4 holders queue meta learned id replica limit lease live idle age …
    if (command.name === 'evalsha' && args[0] === sha) ages.push(Number(args[12]))
    return original.call(this, command, ...rest)
  }
  return { ages, stop: () => void (proto.sendCommand = original) }
}

describe('proxy: a first attempt takes its place in the queue as it arrives', () => {
  it('does not pass its arrival time as if it were re-queued (its body took 80 ms to come in)', async () => {
    const recorder = recordAcquireAges()
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(`${proxy.url}/v2/accounts/search`, {
          method: 'POST',
          headers: { authorization: basicAuth('org1'), 'content-type': 'application/json', 'content-length': '2' },
        })
        req.on('response', (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
        })
        req.on('error', reject)
        req.write('{')
        setTimeout(() => req.end('}'), 80)
      })
      expect(status).toBe(200)
      expect(recorder.ages).toEqual([0])
    } finally {
      recorder.stop()
    }
  })
})
