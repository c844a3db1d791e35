import { describe, expect, it } from 'vitest'
import { stripComments, templateActions, templates, type Tree } from './chart.js'
import { APP_DEPLOYMENT, podOf } from './pod.js'
import { canRender, only, renderOk } from './render.js'

/**
 * sluice reads the Redis URL and the admin token from env vars at start, so a changed value must
 * change the pod template, and it must do so under `helm template` (Argo CD, Flux) as under
 * `helm upgrade`: no `lookup`, which is empty there. docs/deploy.md, "Secrets that change".
 */

const deploymentAnnotations = (values: Tree): Record<string, string> =>
  podOf(only(renderOk(values).manifests, 'Deployment')).annotations
const appAnnotations = (values: Tree): Record<string, string> => {
  const app = renderOk({ mode: 'sidecar', ...values }, { parent: APP_DEPLOYMENT }).manifests.find(
    (m) => m.kind === 'Deployment' && m.metadata.name === 'app',
  )!
  return podOf(app).annotations
}

describe('no template reads the cluster', () => {
  it('none calls lookup', () => {
    for (const [name, text] of templates()) {
      for (const action of templateActions(stripComments(text))) expect(action, name).not.toMatch(/\blookup\b/)
    }
  })
})

describe.skipIf(!canRender)('pods roll when a Secret sluice reads at start changes, whatever renders them', () => {
  it('a new password in redis.url changes the pod template', () => {
    const before = deploymentAnnotations({ redis: { url: 'redis://:old-password@redis.crm.svc:6379/0' } })
    const after = deploymentAnnotations({ redis: { url: 'redis://:new-password@redis.crm.svc:6379/0' } })
    expect(before['checksum/sluice-secret']).toMatch(/^[0-9a-f]{64}$/)
    expect(after['checksum/sluice-secret']).not.toBe(before['checksum/sluice-secret'])
    expect(after['checksum/sluice-settings']).toBe(before['checksum/sluice-settings'])
  })

  it('an existing Secret rotated: the same render until existingSecretsVersion is bumped, then a new pod template', () => {
    const values = { redis: { existingSecret: 'crm-redis' }, adminToken: { existingSecret: 'sluice-admin' } }
    const first = deploymentAnnotations({ ...values, existingSecretsVersion: '3' })
    expect(first['checksum/sluice-secret']).toMatch(/^[0-9a-f]{64}$/)
    expect(deploymentAnnotations({ ...values, existingSecretsVersion: '3' })).toEqual(first) // deterministic: no cluster read
    expect(deploymentAnnotations({ ...values, existingSecretsVersion: '4' })['checksum/sluice-secret']).not.toBe(
      first['checksum/sluice-secret'],
    )
    // another Secret named is a change too
    expect(
      deploymentAnnotations({
        ...values,
        existingSecretsVersion: '3',
        adminToken: { existingSecret: 'sluice-admin-2' },
      })['checksum/sluice-secret'],
    ).not.toBe(first['checksum/sluice-secret'])
  })

  it('reloader.enabled names the existing Secrets for stakater/Reloader on the Deployment', () => {
    const { manifests } = renderOk({
      reloader: { enabled: true },
      redis: { existingSecret: 'crm-redis' },
      adminToken: { existingSecret: 'sluice-admin' },
    })
    const deployment = only(manifests, 'Deployment')
    expect(deployment.metadata.annotations).toEqual({ 'secret.reloader.stakater.com/reload': 'crm-redis,sluice-admin' })
    expect(
      only(renderOk({ redis: { existingSecret: 'crm-redis' } }).manifests, 'Deployment').metadata.annotations,
    ).toBeUndefined()
  })

  it('in sidecar mode the app\'s pod template carries the same checksums ("sluice.sidecarPodAnnotations")', () => {
    const base = { redis: { url: 'redis://:old-password@redis.crm.svc:6379/0' }, settings: { logLevel: 'warn' } }
    const before = appAnnotations(base)
    expect(Object.keys(before).sort()).toEqual(['checksum/sluice-secret', 'checksum/sluice-settings'])
    expect(
      appAnnotations({ ...base, redis: { url: 'redis://:new-password@redis.crm.svc:6379/0' } })[
        'checksum/sluice-secret'
      ],
    ).not.toBe(before['checksum/sluice-secret'])
    expect(appAnnotations({ ...base, settings: { logLevel: 'info' } })['checksum/sluice-settings']).not.toBe(
      before['checksum/sluice-settings'],
    )
  })
})
