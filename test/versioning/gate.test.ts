import { describe, expect, it } from 'vitest'
import { answerOf, CUSTOM_OBJECTS, PLAIN, versioningAt, VOLUNTEERS } from './helpers.js'

const DAY = '2026-03-01T10:00:00Z'
const WARNING = 'GET /customObjects was added in API version 2.10; this request uses 2.9'

describe('an endpoint newer than the request version', () => {
  it('warn (default): forwarded, with a warning header, in the log line and counted', async () => {
    const { versioning, registry } = versioningAt(DAY)
    const d = versioning.decide('2.9', CUSTOM_OBJECTS)
    expect(d.upstream).toBe('2.9')
    expect(d.responseHeaders['x-sluice-version-warning']).toBe(WARNING)
    // 2.9 is deprecated that day: its own headers stay.
    expect(d.responseHeaders.sunset).toBe('Sat, 12 Sep 2026 00:00:00 GMT')
    expect(d.warnings).toEqual([WARNING])
    versioning.decide('2.9', CUSTOM_OBJECTS)
    const metric = await registry.getSingleMetric('sluice_version_gate_warnings_total')!.get()
    expect(metric.values).toEqual([{ labels: { version: '2.9', endpoint: 'GET /customObjects' }, value: 2 }])
  })

  it('reject: answered 400 here', () => {
    const { versioning } = versioningAt(DAY, { gate: 'reject' })
    expect(answerOf(() => versioning.decide('2.9', CUSTOM_OBJECTS))).toEqual({
      code: 'SLUICE_VERSION_TOO_OLD',
      statusCode: 400,
      message:
        'GET /customObjects was added in API version 2.10; this request uses 2.9. Send a newer version in the version header',
    })
  })

  it('off: forwarded with nothing added', () => {
    const { versioning } = versioningAt(DAY, { gate: 'off' })
    expect(versioning.decide('2.6', CUSTOM_OBJECTS)).toMatchObject({
      upstream: '2.6',
      responseHeaders: {},
      warnings: [],
    })
  })

  it('is not triggered by the endpoint version itself, a newer version, no header (the API uses its latest) or an undated endpoint', () => {
    const { versioning } = versioningAt(DAY, { gate: 'reject' })
    expect(versioning.decide('2.10', CUSTOM_OBJECTS).warnings).toEqual([])
    expect(versioning.decide('2.11', CUSTOM_OBJECTS).warnings).toEqual([])
    expect(versioning.decide('2.9', VOLUNTEERS).upstream).toBe('2.9')
    expect(versioning.decide(undefined, CUSTOM_OBJECTS).upstream).toBeUndefined()
    expect(versioning.decide('2.5', PLAIN).upstream).toBe('2.5')
  })

  it('judges the version actually sent: a rewrite to a new enough version passes, a pin too old is caught', () => {
    const rewriting = versioningAt('2026-09-12T10:00:00Z', { retired: 'rewrite', gate: 'reject' })
    expect(rewriting.versioning.decide('2.9', CUSTOM_OBJECTS).upstream).toBe('2.10')
    const pinned = versioningAt(DAY, { missing: 'pin', pin: '2.6', gate: 'reject' })
    expect(answerOf(() => pinned.versioning.decide(undefined, CUSTOM_OBJECTS)).message).toMatch(
      /this request uses 2\.6\./,
    )
  })
})

describe('the gate over the real catalog (config/endpoints.yaml dates its endpoints)', () => {
  it('the examples of docs/versioning.md: activities PUT 2.5, volunteers 2.9, custom objects and households 2.10, activity custom statuses 2.12', async () => {
    const { DEFAULT_CATALOG_FILE, loadCatalog } = await import('../../src/catalog/index.js')
    const catalog = loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 5, overrides: {} })
    const endpoint = (method: string, path: string) => {
      const m = catalog.match(method, path)
      if (!m.ok) throw new Error(`${method} ${path}: ${m.message}`)
      return m.endpoint
    }
    // Each check on a day when the version asked for is still alive (else it would be a 410).
    const tooOld = (day: string, version: string, method: string, path: string) => {
      try {
        versioningAt(`${day}T12:00:00Z`, { gate: 'reject' }).versioning.decide(version, endpoint(method, path))
        return false
      } catch (err) {
        return (err as { code?: string }).code === 'SLUICE_VERSION_TOO_OLD'
      }
    }
    expect(tooOld('2023-06-01', '2.4', 'PUT', '/activities/17')).toBe(true)
    expect(tooOld('2023-06-01', '2.5', 'PUT', '/activities/17')).toBe(false)
    expect(tooOld('2025-06-01', '2.8', 'GET', '/volunteers')).toBe(true)
    expect(tooOld('2025-06-01', '2.9', 'GET', '/volunteers')).toBe(false)
    expect(tooOld('2026-03-01', '2.9', 'GET', '/customObjects/myAlias')).toBe(true)
    expect(tooOld('2026-03-01', '2.9', 'GET', '/households/listHouseholds')).toBe(true)
    expect(tooOld('2026-03-01', '2.10', 'GET', '/households/listHouseholds')).toBe(false)
    expect(tooOld('2026-10-01', '2.11', 'GET', '/properties/activityCustomStatuses')).toBe(true)
    expect(tooOld('2026-10-01', '2.12', 'GET', '/properties/activityCustomStatuses')).toBe(false)
    expect(tooOld('2026-03-01', '2.5', 'GET', '/accounts/17/contacts')).toBe(false)
  })
})
