import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { EXAMPLES_DIR, readYamlFile, type Tree } from './chart.js'
import { APP_DEPLOYMENT, envOf, podOf, settingsOf, sluiceIn, type PodSpec } from './pod.js'
import { canRender, only, render, renderOk } from './render.js'
import pino from 'pino'
import { createAppGate } from '../../src/apps/gate.js'
import { needs } from '../support/tools.js'

/**
 * The chart's apps.* and credentials.* values (README "Apps: identity, access and keys", the chart's
 * README): the app list and the organisations' keys come from Secrets mounted as whole volumes
 * (re-read without a restart), the env names them, sluice's own loader accepts the result, and the
 * chart refuses values that would hand out every key or refuse every request.
 */

interface Volume {
  name: string
  secret?: { secretName: string; items?: { key: string; path: string }[]; defaultMode?: number }
  projected?: { defaultMode?: number; sources: { secret: { name: string; items?: { key: string; path: string }[] } }[] }
}

const values: Tree = {
  redis: { existingSecret: 'sluice-redis' },
  apps: { enabled: true, existingSecret: 'sluice-apps', existingSecretKey: 'apps.yaml' },
  credentials: {
    inject: true,
    orgKeys: [
      { org: '1001', secretName: 'crm-key-1001' },
      { org: '1002', secretName: 'crm-key-1002', secretKey: 'key' },
    ],
    existingSecret: 'crm-keys',
  },
}

const volumesOf = (spec: PodSpec): Volume[] => spec.volumes

describe.skipIf(!canRender)(`helm/sluice with app identity and credential injection ${needs('go + sprig')}`, () => {
  it('mounts the app list and every organisation key from Secrets, and sluice reads the settings the env makes', () => {
    const { manifests } = renderOk(values)
    const { spec } = podOf(only(manifests, 'Deployment'))
    const sluice = sluiceIn(spec)
    const env = Object.fromEntries(sluice.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value]))
    expect(env).toMatchObject({
      SLUICE_APPS_ENABLED: 'true',
      SLUICE_APPS_FILE: '/etc/sluice-apps/apps.yaml',
      SLUICE_CREDENTIALS_INJECT: 'true',
      SLUICE_CREDENTIALS_KEYS_DIR: '/etc/sluice-keys',
    })
    const settings = settingsOf(sluice, manifests, spec)
    expect(settings.apps).toMatchObject({ enabled: true, file: '/etc/sluice-apps/apps.yaml' })
    expect(settings.credentials).toEqual({ inject: true, keysDir: '/etc/sluice-keys' })

    // whole volumes (a subPath mount would never see a rotated Secret), read-only, outside the settings' /etc/sluice
    const mounts = Object.fromEntries(sluice.volumeMounts.map((m) => [m.name, m]))
    expect(mounts['sluice-apps']).toEqual({ name: 'sluice-apps', mountPath: '/etc/sluice-apps', readOnly: true })
    expect(mounts['sluice-keys']).toEqual({ name: 'sluice-keys', mountPath: '/etc/sluice-keys', readOnly: true })
    const volumes = Object.fromEntries(volumesOf(spec).map((v) => [v.name, v]))
    expect(volumes['sluice-apps']!.secret).toEqual({
      secretName: 'sluice-apps',
      items: [{ key: 'apps.yaml', path: 'apps.yaml' }],
      defaultMode: 0o440,
    })
    expect(volumes['sluice-keys']!.projected).toMatchObject({ defaultMode: 0o440 })
    // one file per organisation, named by its id: what sluice reads as that organisation's key
    expect(volumes['sluice-keys']!.projected!.sources).toEqual([
      { secret: { name: 'crm-keys' } },
      { secret: { name: 'crm-key-1001', items: [{ key: 'apiKey', path: '1001' }] } },
      { secret: { name: 'crm-key-1002', items: [{ key: 'key', path: '1002' }] } },
    ])
    // no Secret or ConfigMap of the chart's holds any of it: the Secrets are the operator's
    expect(manifests.filter((m) => m.kind === 'Secret')).toEqual([])
  })

  it('the mounted layout is what sluice reads: a token of the app list passes, and the key of its organisation goes upstream', () => {
    const { manifests } = renderOk(values)
    const { spec } = podOf(only(manifests, 'Deployment'))
    const env = envOf(sluiceIn(spec), manifests, spec)
    // lay the volumes out as the kubelet would, under a temporary root
    const root = mkdtempSync(join(tmpdir(), 'sluice-chart-mounts-'))
    const at = (path: string): string => join(root, path)
    const volumes = Object.fromEntries(volumesOf(spec).map((v) => [v.name, v]))
    mkdirSync(at(env.SLUICE_CREDENTIALS_KEYS_DIR!), { recursive: true })
    for (const source of volumes['sluice-keys']!.projected!.sources) {
      for (const item of source.secret.items ?? [])
        writeFileSync(join(at(env.SLUICE_CREDENTIALS_KEYS_DIR!), item.path), `key-of-${item.path}\n`)
    }
    const token = 'chart-test-token-5d1e'
    mkdirSync(at('/etc/sluice-apps'), { recursive: true })
    writeFileSync(
      at(env.SLUICE_APPS_FILE!),
      `web:\n  tokens: ["sha256:${createHash('sha256').update(token).digest('hex')}"]\n  orgs: ["1002"]\n`,
    )
    const gate = createAppGate(
      {
        enabled: env.SLUICE_APPS_ENABLED === 'true',
        tokenHeader: 'x-sluice-app-token',
        list: {},
        file: at(env.SLUICE_APPS_FILE!),
        reloadIntervalMs: 3_600_000,
      },
      { inject: env.SLUICE_CREDENTIALS_INJECT === 'true', keysDir: at(env.SLUICE_CREDENTIALS_KEYS_DIR!) },
      'x-sluice-app',
      { log: pino({ level: 'silent' }), env: {} },
    )
    try {
      const caller = gate.resolve(
        { authorization: `Basic ${Buffer.from(`1002:${token}`).toString('base64')}` },
        '1002',
        'GET /accounts/{id}',
        'GET',
      )
      expect(caller).toEqual({
        app: 'web',
        authorization: `Basic ${Buffer.from('1002:key-of-1002').toString('base64')}`,
      })
    } finally {
      gate.close()
    }
  })

  it('in a sidecar: the same volumes come with "sluice.sidecarVolumes"', () => {
    const { manifests } = renderOk({ ...values, mode: 'sidecar' }, { parent: APP_DEPLOYMENT })
    const { spec } = podOf(manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'app')!)
    const names = sluiceIn(spec).volumeMounts.map((m) => m.name)
    expect(names).toEqual(expect.arrayContaining(['sluice-apps', 'sluice-keys']))
    for (const name of names) expect(volumesOf(spec).map((v) => v.name)).toContain(name)
  })

  it('off by default: no app env, no volume', () => {
    const { manifests } = renderOk({})
    const sluice = sluiceIn(podOf(only(manifests, 'Deployment')).spec)
    expect(sluice.env.map((e) => e.name).filter((n) => /APPS|CREDENTIALS/.test(n))).toEqual([])
    expect(sluice.volumeMounts.map((m) => m.name)).toEqual(['sluice-tmp'])
  })

  it('refuses injection without app identity, app identity without apps, the chart-set settings, and an organisation twice', () => {
    const refusals: [Tree, string][] = [
      [
        { credentials: { inject: true, orgKeys: [{ org: '1001', secretName: 'k' }] } },
        "sluice: credentials.inject needs apps.enabled: without app identity anyone who reaches sluice could use every organisation's API key",
      ],
      [{ apps: { enabled: true } }, 'sluice: apps.enabled with no app: every request would be refused 401'],
      [
        { apps: { enabled: true, existingSecret: 'a' }, settings: { apps: { file: '/x.yaml' } } },
        'sluice: settings.apps.file is set by the chart',
      ],
      [{ settings: { credentials: { inject: true } } }, 'sluice: settings.credentials is set by the chart'],
      [
        {
          apps: { enabled: true, existingSecret: 'a' },
          credentials: {
            inject: true,
            orgKeys: [
              { org: '1001', secretName: 'k' },
              { org: '1001', secretName: 'l' },
            ],
          },
        },
        'sluice: credentials.orgKeys names organisation 1001 twice',
      ],
    ]
    for (const [bad, message] of refusals) {
      const r = render(bad)
      expect(r.ok, message).toBe(false)
      expect(!r.ok && r.error, message).toContain(message)
    }
    // apps listed in the settings are enough for app identity on
    expect(
      render({
        apps: { enabled: true },
        settings: { apps: { list: { web: { tokens: [`sha256:${'0'.repeat(64)}`], orgs: ['1001'] } } } },
      }).ok,
    ).toBe(true)
  })

  it('the example apps-and-keys.yaml renders as its comment says', () => {
    const example = readYamlFile(join(EXAMPLES_DIR, 'apps-and-keys.yaml')) as Tree
    const { manifests } = renderOk(example)
    const { spec } = podOf(only(manifests, 'Deployment'))
    const settings = settingsOf(sluiceIn(spec), manifests, spec)
    expect(settings.apps.enabled).toBe(true)
    expect(settings.credentials.inject).toBe(true)
    expect(
      volumesOf(spec)
        .find((v) => v.name === 'sluice-keys')!
        .projected!.sources.map((s) => s.secret.items![0]!.path),
    ).toEqual(['1001', '1002'])
  })
})
