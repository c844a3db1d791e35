import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnProxy, type ProxyProcess } from '../../support/process.js'
import { adminJson } from '../../support/proxy.js'
import { uniquePrefix } from '../../support/redis.js'
import {
  hasOpenssl,
  hasRedisTls,
  makeTestCa,
  startTlsCluster,
  type TestCa,
  type TlsCluster,
} from '../../support/redis-tls.js'
import { expectOneSlotShared } from '../../support/shared-slot.js'
import { withSim } from '../../support/sim.js'

/**
 * A Redis Cluster as managed services run it (docs/deploy.md, "Sentinel, Cluster and TLS"): TLS only, a password,
 * nodes that announce a host name, and a certificate that names that host only — not the address it
 * resolves to. Replicas (`node dist/main.js`) trust the test CA through NODE_EXTRA_CA_CERTS.
 */

const PASSWORD = 'cluster-pw'

let ca: TestCa
let cluster: TlsCluster
const replicas: ProxyProcess[] = []
beforeAll(async () => {
  if (process.env.SLUICE_TEST_REDIS_URL || !hasOpenssl || !hasRedisTls) return
  ca = makeTestCa(['DNS:localhost'])
  cluster = await startTlsCluster(ca, PASSWORD)
}, 60_000)
afterAll(async () => {
  for (const r of replicas) await r.stop('SIGKILL')
  await cluster?.close()
  ca?.close()
})

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL || !hasOpenssl || !hasRedisTls)(
  'the Redis limiter on a Redis Cluster with TLS and a password',
  () => {
    it('replicas reach the nodes by the name their certificate carries and share one permit', async () => {
      const sim = await withSim()
      const env = {
        NODE_EXTRA_CA_CERTS: ca.ca,
        SLUICE_UPSTREAM: sim.apiUrl,
        SLUICE_REDIS_KEY_PREFIX: uniquePrefix('cluster-tls'),
        SLUICE_REDIS_URL: `rediss://:${PASSWORD}@${cluster.clusterNodes.split(',')[0]!}`,
        SLUICE_REDIS_TOPOLOGY: 'cluster',
        SLUICE_REDIS_CLUSTER_NODES: cluster.clusterNodes,
      }
      const a = await spawnProxy(env)
      replicas.push(a)
      const b = await spawnProxy(env)
      replicas.push(b)
      await expectOneSlotShared(sim, [a, b], 'org-cluster')
      for (const r of [a, b]) expect(r.output() + JSON.stringify(await adminJson(r, '/status'))).not.toContain(PASSWORD)
    })
  },
)
