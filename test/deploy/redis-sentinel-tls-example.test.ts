import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnProxy } from '../support/process.js'
import { hasOpenssl, hasRedisTls, makeTestCa, startTlsSentinel } from '../support/redis-tls.js'
import { EXAMPLES_DIR, readYamlFile, type Tree } from './chart.js'
import { envOf, podOf, settingsOf, sluiceIn } from './pod.js'
import { canRender, renderOk } from './render.js'
import { onLoopback, reachesMode } from './running.js'

/**
 * examples/redis-sentinel-tls.yaml, for real: a TLS-only master and Sentinel, both with passwords and
 * ACL users, certificates of a CA made for the test. sluice runs with the rendered container's env
 * and settings file; only what lives in the cluster is swapped for local stand-ins through env vars:
 * the Secrets' values, the addresses, the mounted CA file, and the name the test certificate carries.
 */

const MASTER = { password: 'master-default-pw', user: 'sluice', userPassword: 'master-acl-pw' }
const SENTINEL_PASSWORD = 'sentinel-acl-pw'

describe.skipIf(!canRender || !hasOpenssl || !hasRedisTls || process.env.SLUICE_TEST_REDIS_URL)(
  'examples/redis-sentinel-tls.yaml against a Sentinel with passwords and TLS',
  () => {
    const stops: (() => Promise<unknown> | void)[] = []
    afterAll(async () => {
      for (const stop of stops.reverse()) await stop()
    })

    it('the Sentinel password from its Secret, the ACL user from the settings and TLS to both let sluice in', async () => {
      const values = readYamlFile(join(EXAMPLES_DIR, 'redis-sentinel-tls.yaml')) as Tree
      const { manifests } = renderOk(values)
      const { spec } = podOf(manifests.find((m) => m.kind === 'Deployment')!)
      const container = sluiceIn(spec)
      const settings = settingsOf(container, manifests, spec)
      expect(settings.redis).toMatchObject({ topology: 'sentinel', sentinelUsername: 'sluice-sentinel' })
      expect(container.env.find((e) => e.name === 'SLUICE_REDIS_SENTINEL_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({
        name: 'sluice-redis-sentinel',
        key: 'password',
      })

      const ca = makeTestCa(['DNS:redis.test'])
      stops.push(() => ca.close())
      const sentinel = await startTlsSentinel(
        ca,
        MASTER,
        { password: 'sentinel-default-pw', user: settings.redis.sentinelUsername, userPassword: SENTINEL_PASSWORD },
        settings.redis.sentinelName,
      )
      stops.push(() => sentinel.close())
      const env = onLoopback(envOf(container, manifests, spec), {
        SLUICE_REDIS_URL: `rediss://${MASTER.user}:${MASTER.userPassword}@ignored-with-sentinel:6379/0`,
        SLUICE_REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
        SLUICE_REDIS_SENTINELS: sentinel.sentinels,
        SLUICE_REDIS_TLS_SERVERNAME: 'redis.test',
        NODE_EXTRA_CA_CERTS: ca.ca,
      })
      const proxy = await spawnProxy(env)
      stops.push(() => proxy.stop('SIGKILL'))
      expect(await reachesMode(proxy, 'redis'), proxy.output()).toBe(true)
    })
  },
)
