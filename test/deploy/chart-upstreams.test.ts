import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { EXAMPLES_DIR, readYamlFile, type Tree } from './chart.js'
import { podOf, settingsOf, sluiceIn } from './pod.js'
import { canRender, only, render, renderOk } from './render.js'
import { resolveUpstreams } from '../../src/upstreams/index.js'
import { needs } from '../support/tools.js'

/**
 * The chart value `upstreams` (docs/deploy.md, "Several APIs"): rendered into settings.upstreams, a
 * catalogFile shipped in the settings ConfigMap and named as the catalog, keys projected as
 * `<name>.<instance>` (a valid Secret key and file name), checked by values.schema.json.
 */

const example = (): Tree => readYamlFile(join(EXAMPLES_DIR, 'upstreams.yaml')) as Tree

describe.skipIf(!canRender)(`helm/sluice upstreams ${needs('go + sprig')}`, () => {
  it("the example renders settings sluice accepts, with the catalog file beside them and trial's key as trial.1001", () => {
    const { manifests } = renderOk(example())
    const { spec } = podOf(only(manifests, 'Deployment'))
    const sluice = sluiceIn(spec)
    const settings = settingsOf(sluice, manifests, spec)
    expect(settings.upstreams.map((u) => [u.name, u.prefix])).toEqual([
      ['trial', '/trial/v2'],
      ['reports', '/reports/v1'],
    ])
    expect(settings.upstreams[1]!.catalog).toBe('/etc/sluice/catalog-reports.yaml')
    expect(settings.upstreams[1]!.credentials).toEqual({ inject: false, header: 'authorization', scheme: 'basic' })
    // the catalog file is in the mounted ConfigMap, and sluice compiles it
    const configMap = only(manifests, 'ConfigMap') as unknown as { data: Record<string, string> }
    const local = join(mkdtempSync(join(tmpdir(), 'sluice-catalog-')), 'catalog-reports.yaml')
    writeFileSync(local, configMap.data['catalog-reports.yaml']!)
    const upstreams = settings.upstreams.map((u) => (u.name === 'reports' ? { ...u, catalog: local } : u))
    const plans = resolveUpstreams({ ...settings, upstreams })
    const reports = plans.find((p) => p.name === 'reports')!
    expect(reports.catalog.match('GET', '/anything/7')).toMatchObject({
      ok: true,
      endpoint: { id: 'ALL /*', limit: 4, rate: { requests: 100, windowMs: 10000 } },
    })
    expect(reports.credentials.inject).toBe(false)
    expect(plans.find((p) => p.name === 'trial')!.credentials.inject).toBe(true)
    // trial's key: a projected item named trial.1001 in the keys volume
    const keys = spec.volumes.find((v) => v.name === 'sluice-keys') as unknown as {
      projected: { sources: { secret: { name: string; items: { key: string; path: string }[] } }[] }
    }
    expect(keys.projected.sources.map((s) => [s.secret.name, s.secret.items[0]!.path])).toEqual([
      ['crm-key-1001', '1001'],
      ['crm-trial-key-1001', 'trial.1001'],
    ])
  })

  it('values.schema.json refuses a bad upstream, and the chart refuses upstreams listed twice', () => {
    const bad = (upstream: Tree): string => {
      const r = render({ ...example(), upstreams: [upstream] })
      return r.ok ? 'rendered' : r.error
    }
    expect(bad({ name: 'Reports', prefix: '/r', url: 'https://r.example' })).toMatch(
      /upstreams\.0\.name|upstreams\.0\/name|name/,
    )
    expect(bad({ name: 'r', prefix: '/r', url: 'https://u:p@r.example' })).toContain('upstreams.0.url')
    expect(
      bad({ name: 'r', prefix: '/r', url: 'https://r.example', keys: [{ instance: 'a b', secretName: 's' }] }),
    ).toMatch(/instance/)
    expect(bad({ name: 'r', prefix: '/r', url: 'https://r.example', credentials: { scheme: 'token' } })).toMatch(
      /scheme/,
    )
    const twice = render({ ...example(), settings: { upstreams: [] } })
    expect(twice.ok ? 'rendered' : twice.error).toContain(
      'both settings.upstreams and the chart value upstreams are set',
    )
  })

  it('a change of an upstream or its catalogFile rolls the pods (the settings checksum)', () => {
    const checksum = (values: Tree): string | undefined =>
      podOf(only(renderOk(values).manifests, 'Deployment')).annotations['checksum/sluice-settings']
    const base = example()
    const upstreams = base.upstreams as Tree[]
    const changed = upstreams.map((u) => (u.name === 'reports' ? { ...u, catalogFile: { default: 5 } } : u))
    expect(checksum(base)).toMatch(/^[0-9a-f]{64}$/)
    expect(checksum({ ...base, upstreams: changed })).not.toBe(checksum(base))
  })

  it('no upstreams: the settings ConfigMap is as before', () => {
    const { manifests } = renderOk({ settings: { logLevel: 'info' } })
    const configMap = only(manifests, 'ConfigMap') as unknown as { data: Record<string, string> }
    expect(Object.keys(configMap.data)).toEqual(['settings.yaml'])
    expect(configMap.data['settings.yaml']).toBe('logLevel: info\n')
  })
})
