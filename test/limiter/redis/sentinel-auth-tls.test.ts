import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { spawnProxy, type ProxyProcess } from '../../support/process.js'
import { adminJson } from '../../support/proxy.js'
import { uniquePrefix } from '../../support/redis.js'
import {
  hasOpenssl,
  hasRedisTls,
  makeTestCa,
  startTlsSentinel,
  type TestCa,
  type TlsSentinel,
} from '../../support/redis-tls.js'
import { expectOneSlotShared, modeBecomes } from '../../support/shared-slot.js'
import { withSim } from '../../support/sim.js'

/**
 * Sentinel with passwords, ACL users and TLS everywhere (docs/deploy.md, "Sentinel, Cluster and TLS"): a master
 * and a Sentinel that listen on TLS ports only, with a certificate naming only `redis.test`, both
 * requiring a password and knowing an ACL user. Replicas (`node dist/main.js`, built by vitest's
 * global setup) trust the test CA through NODE_EXTRA_CA_CERTS, as the chart's redis-tls example does.
 */

const MASTER = { password: 'master-default-pw', user: 'sluice', userPassword: 'master-acl-pw' }
const SENTINEL = { password: 'sentinel-default-pw', user: 'sluice-sentinel', userPassword: 'sentinel-acl-pw' }
const SECRETS = [MASTER.password, MASTER.userPassword, SENTINEL.password, SENTINEL.userPassword]

let ca: TestCa
let sentinel: TlsSentinel
const replicas: ProxyProcess[] = []
beforeAll(async () => {
  if (process.env.SLUICE_TEST_REDIS_URL || !hasOpenssl || !hasRedisTls) return
  ca = makeTestCa(['DNS:redis.test'])
  sentinel = await startTlsSentinel(ca, MASTER, SENTINEL)
}, 60_000)
afterAll(async () => {
  for (const r of replicas) await r.stop('SIGKILL')
  await sentinel?.close()
  ca?.close()
})

async function replica(env: Record<string, string>): Promise<ProxyProcess> {
  const started = await spawnProxy({
    NODE_EXTRA_CA_CERTS: ca.ca,
    SLUICE_REDIS_TOPOLOGY: 'sentinel',
    SLUICE_REDIS_SENTINELS: sentinel.sentinels,
    SLUICE_REDIS_SENTINEL_NAME: sentinel.name,
    SLUICE_REDIS_TLS_SERVERNAME: 'redis.test',
    ...env,
  })
  replicas.push(started)
  return started
}

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL || !hasOpenssl || !hasRedisTls)(
  'the Redis limiter through a Sentinel with passwords, ACL users and TLS',
  () => {
    it('replicas signing in as ACL users or with the default passwords share one permit; no password reaches a log line or /status', async () => {
      const sim = await withSim()
      const prefix = uniquePrefix('sentinel-tls')
      // the url's host is ignored with Sentinel: its credentials are the master's
      const asAclUsers = await replica({
        SLUICE_UPSTREAM: sim.apiUrl,
        SLUICE_REDIS_KEY_PREFIX: prefix,
        SLUICE_REDIS_URL: `rediss://${MASTER.user}:${MASTER.userPassword}@ignored.invalid:1/0`,
        SLUICE_REDIS_SENTINEL_USERNAME: SENTINEL.user,
        SLUICE_REDIS_SENTINEL_PASSWORD: SENTINEL.userPassword,
      })
      const withPasswords = await replica({
        SLUICE_UPSTREAM: sim.apiUrl,
        SLUICE_REDIS_KEY_PREFIX: prefix,
        SLUICE_REDIS_URL: `rediss://:${MASTER.password}@ignored.invalid:1/0`,
        SLUICE_REDIS_SENTINEL_PASSWORD: SENTINEL.password,
      })
      await expectOneSlotShared(sim, [asAclUsers, withPasswords], 'org-sentinel')
      for (const r of [asAclUsers, withPasswords]) {
        const text = r.output() + JSON.stringify(await adminJson(r, '/status'))
        expect(SECRETS.filter((s) => text.includes(s))).toEqual([])
      }
    })

    it('with sentinelTls: false, plain-text Sentinels in front of a TLS-only master', async () => {
      const plain = await startTlsSentinel(ca, MASTER, SENTINEL, 'plainsentinels', { plainSentinel: true })
      onTestFinished(() => plain.close())
      const sim = await withSim()
      const r = await replica({
        SLUICE_UPSTREAM: sim.apiUrl,
        SLUICE_REDIS_KEY_PREFIX: uniquePrefix('sentinel-plain'),
        SLUICE_REDIS_URL: `rediss://${MASTER.user}:${MASTER.userPassword}@ignored.invalid:1/0`,
        SLUICE_REDIS_SENTINELS: plain.sentinels,
        SLUICE_REDIS_SENTINEL_NAME: plain.name,
        SLUICE_REDIS_SENTINEL_PASSWORD: SENTINEL.password,
        SLUICE_REDIS_SENTINEL_TLS: 'false',
      })
      expect(await modeBecomes(r, 'redis'), r.output()).toBe(true)
    })

    it('with a wrong Sentinel password the replica stays on its fallback and shows the refusal, without the password', async () => {
      const sim = await withSim()
      const wrong = await replica({
        SLUICE_UPSTREAM: sim.apiUrl,
        SLUICE_REDIS_KEY_PREFIX: uniquePrefix('sentinel-tls-wrong'),
        SLUICE_REDIS_URL: `rediss://${MASTER.user}:${MASTER.userPassword}@ignored.invalid:1/0`,
        SLUICE_REDIS_SENTINEL_USERNAME: SENTINEL.user,
        SLUICE_REDIS_SENTINEL_PASSWORD: 'not-the-sentinel-pw',
      })
      expect(await modeBecomes(wrong, 'local')).toBe(true)
      const status = await adminJson<{ details: { redis: string; lastError?: string } }>(wrong, '/status')
      expect(status.details.redis).toBe('unreachable')
      // the Sentinel was reached over TLS and refused the password: that, not a TLS failure, is the reason shown
      expect(status.details.lastError).toMatch(/sentinels are unreachable.*WRONGPASS/)
      const text = wrong.output() + JSON.stringify(status)
      expect([...SECRETS, 'not-the-sentinel-pw'].filter((s) => text.includes(s))).toEqual([])
    })
  },
)
