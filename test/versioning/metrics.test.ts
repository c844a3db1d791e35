import { describe, expect, it } from 'vitest'
import { createVersioning } from '../../src/versioning/index.js'
import { versionSettingsSchema } from '../../src/versioning/settings.js'
import { CUSTOM_OBJECTS, PLAIN, versioningAt } from './helpers.js'

type Values = { labels: Record<string, string | number>; value: number }[]

describe('version metrics after known calls', () => {
  it('counts requests by version and state, rewrites, rejections, gate warnings, and retirement dates', async () => {
    const h = versioningAt('2026-09-11T10:00:00Z', { retired: 'rewrite', missing: 'pin', pin: '2.11', gate: 'warn' })
    const call = (v: string | undefined, endpoint: { id: string; since?: string } = PLAIN) => {
      try {
        h.versioning.decide(v, endpoint)
      } catch {
        // counted all the same
      }
    }
    call('2.9')
    call('2.9')
    call('2.9', CUSTOM_OBJECTS) // gate warning
    call('2.8') // rewritten to 2.9
    call(undefined) // pinned to 2.11
    call('abc') // 400
    call('9.9') // unknown
    h.setNow('2026-09-12T10:00:00Z')
    call('2.9') // now retired: rewritten to 2.10

    const values = async (name: string): Promise<Values> =>
      (await h.registry.getSingleMetric(name)!.get()).values as Values
    const sorted = (v: Values) =>
      [...v].sort((a, b) => JSON.stringify(a.labels).localeCompare(JSON.stringify(b.labels)))

    expect(sorted(await values('sluice_version_requests_total'))).toEqual(
      sorted([
        { labels: { version: '2.9', state: 'deprecated' }, value: 3 },
        { labels: { version: '2.9', state: 'retired' }, value: 1 },
        { labels: { version: '2.8', state: 'retired' }, value: 1 },
        { labels: { version: 'none', state: 'absent' }, value: 1 },
        { labels: { version: 'invalid', state: 'invalid' }, value: 1 },
        { labels: { version: '9.9', state: 'unknown' }, value: 1 },
      ]),
    )
    expect(sorted(await values('sluice_version_rewrites_total'))).toEqual(
      sorted([
        { labels: { from: '2.8', to: '2.9' }, value: 1 },
        { labels: { from: 'none', to: '2.11' }, value: 1 },
        { labels: { from: '2.9', to: '2.10' }, value: 1 },
      ]),
    )
    expect(await values('sluice_version_rejections_total')).toEqual([
      { labels: { version: 'invalid', reason: 'malformed' }, value: 1 },
    ])
    expect(await values('sluice_version_gate_warnings_total')).toEqual([
      { labels: { version: '2.9', endpoint: 'GET /customObjects' }, value: 1 },
    ])
    // Versions seen (asked for or sent) with a retirement date: 2.8 retired 2025-10-18, 2.9 today.
    expect(sorted(await values('sluice_version_retirement_timestamp_seconds'))).toEqual(
      sorted([
        { labels: { version: '2.8' }, value: Date.parse('2025-10-18T00:00:00Z') / 1000 },
        { labels: { version: '2.9' }, value: Date.parse('2026-09-12T00:00:00Z') / 1000 },
      ]),
    )
    expect(h.versioning.snapshot()).toMatchObject({
      noHeader: { action: 'pin', upstream: '2.11', requests: 1 },
      malformed: 1,
    })
    expect(h.versioning.snapshot().versions.find((v) => v.version === '2.9')?.requests).toBe(4)
  })

  it('the retirement date is a timestamp (base unit: seconds), the same whatever the clock says, for the "retires within 30 days" alert', async () => {
    const h = versioningAt('2026-08-13T10:00:00Z')
    h.versioning.decide('2.9', PLAIN)
    const at = async () =>
      (await h.registry.getSingleMetric('sluice_version_retirement_timestamp_seconds')!.get()).values[0]?.value
    expect(await at()).toBe(Date.parse('2026-09-12T00:00:00Z') / 1000)
    h.setNow('2026-09-10T10:00:00Z')
    expect(await at()).toBe(Date.parse('2026-09-12T00:00:00Z') / 1000)
  })

  it('retirement rejections and gate rejections are counted by reason', async () => {
    const h = versioningAt('2026-09-12T10:00:00Z', { gate: 'reject' })
    for (const [v, e] of [
      ['2.9', PLAIN],
      ['2.7', PLAIN],
      ['2.9', PLAIN],
    ] as const)
      expect(() => h.versioning.decide(v, e)).toThrow()
    expect(() => h.versioning.decide('2.10', { id: 'GET /properties/activityCustomStatuses', since: '2.12' })).toThrow()
    const rejections = (await h.registry.getSingleMetric('sluice_version_rejections_total')!.get()).values
    expect(rejections).toEqual(
      expect.arrayContaining([
        { labels: { version: '2.9', reason: 'retired' }, value: 2 },
        { labels: { version: '2.7', reason: 'retired' }, value: 1 },
        { labels: { version: '2.10', reason: 'gate' }, value: 1 },
      ]),
    )
    expect(rejections).toHaveLength(3)
  })

  it('labels never carry raw header text: past 32 unknown versions they share "other"', async () => {
    const h = versioningAt('2026-09-12T10:00:00Z')
    for (let i = 0; i < 40; i++) h.versioning.decide(`7.${i}`, PLAIN)
    for (const bad of ['<script>', 'x'.repeat(100), '2.9; drop'])
      expect(() => h.versioning.decide(bad, PLAIN)).toThrow()
    const requests = (await h.registry.getSingleMetric('sluice_version_requests_total')!.get()).values
    const versions = requests.map((r) => String(r.labels.version))
    expect(versions.filter((v) => v.startsWith('7.'))).toHaveLength(32)
    expect(requests.find((r) => r.labels.version === 'other')?.value).toBe(8)
    expect(requests.find((r) => r.labels.version === 'invalid')?.value).toBe(3)
    for (const v of versions) expect(v).toMatch(/^(\d+\.\d+|none|invalid|other)$/)
  })

  it('without a registry, the metrics are kept but registered nowhere', () => {
    const quiet = { info() {}, warn() {}, error() {} }
    const settings = versionSettingsSchema.parse({})
    // Two instances without a registry would collide on a shared one; they must not touch any.
    createVersioning(settings, { log: quiet })
    expect(() => createVersioning(settings, { log: quiet })).not.toThrow()
  })
})
