import { describe, expect, it } from 'vitest'
import { podOf, sluiceIn } from './pod.js'
import { canRender, render, renderOk } from './render.js'

/** The Sentinels' password reaches sluice from a Secret, never through the settings ConfigMap. */

const SENTINEL = { topology: 'sentinel', sentinels: 's-0.platform.svc:26379' }

describe.skipIf(!canRender)('redis.sentinelPassword', () => {
  it('is passed as SLUICE_REDIS_SENTINEL_PASSWORD from the existing Secret', () => {
    const values = {
      redis: {
        existingSecret: 'crm-redis',
        sentinelPassword: { existingSecret: 'crm-sentinel', existingSecretKey: 'pw' },
      },
      settings: { redis: SENTINEL },
    }
    const { manifests } = renderOk(values)
    const env = sluiceIn(podOf(manifests.find((m) => m.kind === 'Deployment')!).spec).env
    expect(env.find((e) => e.name === 'SLUICE_REDIS_SENTINEL_PASSWORD')?.valueFrom).toEqual({
      secretKeyRef: { name: 'crm-sentinel', key: 'pw' },
    })
    expect(JSON.stringify(manifests.filter((m) => m.kind === 'ConfigMap'))).not.toContain('crm-sentinel')
    // without one, no such variable: Sentinels without a password
    const plain = renderOk({ redis: { existingSecret: 'crm-redis' }, settings: { redis: SENTINEL } })
    expect(
      sluiceIn(podOf(plain.manifests.find((m) => m.kind === 'Deployment')!).spec).env.map((e) => e.name),
    ).not.toContain('SLUICE_REDIS_SENTINEL_PASSWORD')
  })

  it('is refused in settings (a ConfigMap) and without topology: sentinel', () => {
    const inSettings = render({
      redis: { existingSecret: 'crm-redis' },
      settings: { redis: { ...SENTINEL, sentinelPassword: 'pw' } },
    })
    expect(!inSettings.ok && inSettings.error).toContain(
      "settings.redis.sentinelPassword would put the Sentinels' password in a ConfigMap: use redis.sentinelPassword.existingSecret instead",
    )
    const notSentinel = render({
      redis: { existingSecret: 'crm-redis', sentinelPassword: { existingSecret: 'crm-sentinel' } },
    })
    expect(!notSentinel.ok && notSentinel.error).toContain(
      'redis.sentinelPassword.existingSecret is set but settings.redis.topology is not sentinel',
    )
  })
})
