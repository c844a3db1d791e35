import { describe, expect, it } from 'vitest'
import { answerOf, PLAIN, versioningAt } from './helpers.js'

// 2.9 retires on 2026-09-12 (§9): the API answers 410 from that day on.
describe('2.9 on each side of its retirement (policy reject, the default)', () => {
  it('on 2026-09-11 it is forwarded as is, with Deprecation and Sunset', () => {
    const { versioning } = versioningAt('2026-09-11T23:59:59.999Z')
    const d = versioning.decide('2.9', PLAIN)
    expect(d).toMatchObject({ requested: '2.9', upstream: '2.9', action: 'pass' })
    expect(d.rewrittenFrom).toBeUndefined()
    expect(d.responseHeaders).toEqual({
      // Deprecated since 2.10's release (2024-12-14), sunset on the retirement day.
      deprecation: `@${Date.UTC(2024, 11, 14) / 1000}`,
      sunset: 'Sat, 12 Sep 2026 00:00:00 GMT',
    })
    expect(d.warnings).toEqual([])
  })

  it('on 2026-09-12 it is answered 410 here, naming the version, the date and the version to move to', () => {
    const { versioning } = versioningAt('2026-09-12T00:00:00.000Z')
    expect(answerOf(() => versioning.decide('2.9', PLAIN))).toEqual({
      code: 'SLUICE_VERSION_RETIRED',
      statusCode: 410,
      message: 'API version 2.9 was retired on 2026-09-12; move to 2.10 or later (the latest is 2.12)',
    })
  })

  it('one versioning crosses midnight by its clock: the answer changes with the date, and the log says so', () => {
    const h = versioningAt('2026-09-11T23:59:59.000Z')
    expect(h.versioning.decide('2.9', PLAIN).upstream).toBe('2.9')
    expect(h.versioning.decide('2.12', PLAIN).upstream).toBe('2.12')
    expect(h.versioning.snapshot().versions.find((v) => v.version === '2.12')?.state).toBe('unreleased')
    h.setNow('2026-09-12T00:00:01.000Z')
    expect(answerOf(() => h.versioning.decide('2.9', PLAIN)).statusCode).toBe(410)
    expect(h.versioning.snapshot()).toMatchObject({ today: '2026-09-12', latest: '2.12' })
    expect(h.logs.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      'API version 2.9 was retired on 2026-09-12: requests for it are now answered 410 by sluice',
    ])
    // And back: a clock set back (tests, or a corrected clock) is followed as well.
    h.setNow('2026-09-11T08:00:00.000Z')
    expect(h.versioning.decide('2.9', PLAIN).upstream).toBe('2.9')
  })

  it('the latest version moves with the calendar: 2.11 before 2.12 is released, 2.12 from its release day', () => {
    expect(versioningAt('2026-09-11T12:00:00Z').versioning.snapshot().latest).toBe('2.11')
    expect(versioningAt('2026-09-12T12:00:00Z').versioning.snapshot().latest).toBe('2.12')
  })

  it('versions.retirements in the settings adds an announcement without editing the calendar', () => {
    const { versioning } = versioningAt('2027-03-13T00:00:00Z', { retirements: { '2.10': '2027-03-13' } })
    expect(answerOf(() => versioning.decide('2.10', PLAIN)).message).toBe(
      'API version 2.10 was retired on 2027-03-13; move to 2.11 or later (the latest is 2.12)',
    )
    expect(versioning.snapshot().versions.find((v) => v.version === '2.10')).toMatchObject({
      retirementSource: 'settings',
      state: 'retired',
    })
  })
})

describe('API v1 (retired 2026-07-11)', () => {
  it('is answered 410 from its retirement day, not before', () => {
    expect(() => versioningAt('2026-07-10T23:59:59Z').versioning.rejectApiV1()).not.toThrow()
    expect(answerOf(() => versioningAt('2026-07-11T00:00:00Z').versioning.rejectApiV1())).toEqual({
      code: 'SLUICE_API_V1_RETIRED',
      statusCode: 410,
      message: 'API v1 was retired on 2026-07-11; move to API v2',
    })
  })
})
