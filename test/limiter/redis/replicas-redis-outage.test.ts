import { describe, expect, it } from 'vitest'
import { adminJson } from '../../support/proxy.js'
import { send, until } from '../../support/http.js'
import { useRedisReplicas } from '../../support/replicas.js'
import { basicAuth } from '../../support/sim.js'
import { needs } from '../../support/tools.js'
import { heardByAll } from './helpers.js'

/** Three proxy replicas (`node dist/main.js`, built by `npm test`) lose their Redis under load, then get it back. */

const stack = useRedisReplicas({
  simLatencyMs: 5,
  prefixName: 'outage',
  env: { SLUICE_REDIS_LEASE_MS: '1500', SLUICE_REDIS_FALLBACK: 'local' },
  skip: Boolean(process.env.SLUICE_TEST_REDIS_URL),
})

const modes = (): Promise<string[]> =>
  Promise.all(stack.replicas.map(async (r) => (await adminJson<{ mode: string }>(r, '/readyz')).mode))

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `three replicas when Redis stops under load and starts again ${needs('redis-server')}`,
  () => {
    it('no replica dies, every request is answered, the mode goes to the fallback and back', async () => {
      expect(await modes()).toEqual(['redis', 'redis', 'redis'])
      let running = true
      const statuses = new Map<number, number>()
      const clients = Array.from({ length: 30 }, async (_, client) => {
        const replica = stack.replicas[client % 3]!
        while (running) {
          const answer = await send(replica.url, client % 2 ? '/v2/accounts/search' : '/v2/donations/3', {
            method: client % 2 ? 'POST' : 'GET',
            headers: { authorization: basicAuth(`org${client % 2}`) },
            body: client % 2 ? '{}' : undefined,
          })
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        }
      })
      const answered = (): number => [...statuses.values()].reduce((a, b) => a + b, 0)

      await until(() => answered() > 50, 'traffic through Redis')
      await heardByAll(stack.redis.client(), stack.prefix, 3) // each takes its local slots only then
      await stack.redis.stop()
      await until(async () => (await modes()).every((m) => m === 'local'), 'every replica in the local fallback')
      const before = answered()
      await until(() => answered() > before + 50, 'traffic through the fallback')
      await stack.redis.start()
      await until(async () => (await modes()).every((m) => m === 'redis'), 'every replica back on Redis', 15_000)
      const back = answered()
      await until(() => answered() > back + 50, 'traffic through Redis again')
      running = false
      await Promise.all(clients)

      expect(Object.fromEntries(statuses)).toEqual({ 200: answered() })
      for (const replica of stack.replicas) expect(replica.child.exitCode).toBeNull()
      for (const replica of stack.replicas) {
        await until(
          async () => (await adminJson<{ keys: unknown[] }>(replica, '/status')).keys.length === 0,
          'no permit left',
        )
      }
    })
  },
)
