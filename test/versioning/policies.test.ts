import { describe, expect, it } from 'vitest'
import { answerOf, PLAIN, versioningAt } from './helpers.js'

const RETIRED_DAY = '2026-09-12T10:00:00Z' // 2.9 retired today, 2.12 released today

describe('retired versions: reject', () => {
  it('answers 410 for every retired version, and names the next supported one', () => {
    const { versioning } = versioningAt(RETIRED_DAY, { retired: 'reject' })
    expect(answerOf(() => versioning.decide('2.8', PLAIN)).message).toBe(
      'API version 2.8 was retired on 2025-10-18; move to 2.10 or later (the latest is 2.12)',
    )
    expect(answerOf(() => versioning.decide('2.4', PLAIN)).message).toBe(
      'API version 2.4 was retired on 2024-01-20; move to 2.5 or later (the latest is 2.12)',
    )
    // Supported versions go through untouched.
    expect(versioning.decide('2.11', PLAIN)).toMatchObject({
      requested: '2.11',
      upstream: '2.11',
      action: 'pass',
      responseHeaders: {},
    })
  })
})

describe('retired versions: rewrite', () => {
  it('next: to the next supported version, saying so in a header and in the log line', () => {
    const { versioning } = versioningAt(RETIRED_DAY, { retired: 'rewrite', rewriteTo: 'next' })
    const notice = 'API version 2.9 was retired on 2026-09-12; this request was sent as 2.10'
    expect(versioning.decide('2.9', PLAIN)).toEqual({
      requested: '2.9',
      upstream: '2.10',
      action: 'rewrite',
      rewrittenFrom: '2.9',
      responseHeaders: { 'x-sluice-api-version': '2.10', 'x-sluice-version-notice': notice },
      warnings: [notice],
    })
    // 2.7 and 2.8 are retired too: the next one alive after them is 2.10.
    expect(versioning.decide('2.7', PLAIN).upstream).toBe('2.10')
  })

  it('next, the day before: 2.8 goes to 2.9, which itself carries its Deprecation and Sunset', () => {
    const { versioning } = versioningAt('2026-09-11T10:00:00Z', { retired: 'rewrite', rewriteTo: 'next' })
    const d = versioning.decide('2.8', PLAIN)
    expect(d).toMatchObject({ upstream: '2.9', action: 'rewrite', rewrittenFrom: '2.8' })
    expect(d.responseHeaders).toMatchObject({ sunset: 'Sat, 12 Sep 2026 00:00:00 GMT', 'x-sluice-api-version': '2.9' })
  })

  it('latest: to the newest supported version of the day', () => {
    expect(
      versioningAt(RETIRED_DAY, { retired: 'rewrite', rewriteTo: 'latest' }).versioning.decide('2.9', PLAIN),
    ).toMatchObject({
      upstream: '2.12',
      rewrittenFrom: '2.9',
    })
    expect(
      versioningAt('2026-09-11T10:00:00Z', { retired: 'rewrite', rewriteTo: 'latest' }).versioning.decide('2.8', PLAIN)
        .upstream,
    ).toBe('2.11')
  })

  it('map: by the explicit map; a retired version it does not list is answered 410', () => {
    const { versioning } = versioningAt(RETIRED_DAY, {
      retired: 'rewrite',
      rewriteTo: 'map',
      rewriteMap: { '2.9': '2.11', '2.8': '2.10' },
    })
    expect(versioning.decide('2.9', PLAIN)).toMatchObject({ upstream: '2.11', rewrittenFrom: '2.9' })
    expect(versioning.decide('2.8', PLAIN)).toMatchObject({ upstream: '2.10', rewrittenFrom: '2.8' })
    expect(answerOf(() => versioning.decide('2.7', PLAIN)).statusCode).toBe(410)
    // A map entry for a version still alive changes nothing until that version retires.
    const before = versioningAt('2026-09-11T10:00:00Z', {
      retired: 'rewrite',
      rewriteTo: 'map',
      rewriteMap: { '2.9': '2.11' },
    })
    expect(before.versioning.decide('2.9', PLAIN)).toMatchObject({ upstream: '2.9', action: 'pass' })
  })

  it('map: a target that is itself retired is not used (410), and the log says why', () => {
    const h = versioningAt(RETIRED_DAY, { retired: 'rewrite', rewriteTo: 'map', rewriteMap: { '2.8': '2.9' } })
    expect(answerOf(() => h.versioning.decide('2.8', PLAIN)).statusCode).toBe(410)
    expect(
      h.logs.some(
        (l) => l.level === 'error' && l.msg.startsWith('versions.rewriteMap sends 2.8 to 2.9, which is retired'),
      ),
    ).toBe(true)
  })
})

describe('requests without the header', () => {
  it('pass: no header goes upstream, nothing is added', () => {
    const { versioning } = versioningAt(RETIRED_DAY, { missing: 'pass' })
    expect(versioning.decide(undefined, PLAIN)).toEqual({
      requested: undefined,
      upstream: undefined,
      action: 'pass',
      responseHeaders: {},
      warnings: [],
    })
  })

  it('pin: the pinned version is sent, and the answer says which', () => {
    const { versioning } = versioningAt(RETIRED_DAY, { missing: 'pin', pin: '2.11' })
    const notice = 'no NEON-API-VERSION header: sent as 2.11 (versions.pin)'
    expect(versioning.decide(undefined, PLAIN)).toEqual({
      requested: undefined,
      upstream: '2.11',
      action: 'pin',
      responseHeaders: { 'x-sluice-api-version': '2.11', 'x-sluice-version-notice': notice },
      warnings: [notice],
    })
    // A request with the header is not touched by the pin.
    expect(versioning.decide('2.12', PLAIN).upstream).toBe('2.12')
  })

  it('pin to a version that has retired: the retired policy applies to it, and the log asks to update the pin', () => {
    const rejecting = versioningAt(RETIRED_DAY, { missing: 'pin', pin: '2.9' })
    expect(answerOf(() => rejecting.versioning.decide(undefined, PLAIN))).toEqual({
      code: 'SLUICE_VERSION_RETIRED',
      statusCode: 410,
      message:
        'Requests without the NEON-API-VERSION header are sent as 2.9 (setting versions.pin), and API version 2.9 was retired on 2026-09-12; send the header with 2.10 or later (the latest is 2.12)',
    })
    expect(
      rejecting.logs.some((l) => l.level === 'error' && l.msg === 'versions.pin 2.9 is retired; update versions.pin'),
    ).toBe(true)

    const rewriting = versioningAt(RETIRED_DAY, { missing: 'pin', pin: '2.9', retired: 'rewrite' })
    expect(rewriting.versioning.decide(undefined, PLAIN)).toMatchObject({
      requested: undefined,
      upstream: '2.10',
      action: 'pin',
      rewrittenFrom: '2.9',
    })
  })

  it('pin to a version retiring within 30 days: warned in the log, still sent', () => {
    const h = versioningAt('2026-08-20T00:00:00Z', { missing: 'pin', pin: '2.9' })
    expect(h.versioning.decide(undefined, PLAIN).upstream).toBe('2.9')
    expect(h.logs.find((l) => l.level === 'warn')?.msg).toBe('versions.pin 2.9 retires in 23 days; update versions.pin')
  })
})

describe('versions outside the calendar', () => {
  it('a well-formed version the calendar does not list is passed through for the API to decide', () => {
    const { versioning } = versioningAt(RETIRED_DAY)
    expect(versioning.decide('2.13', PLAIN)).toMatchObject({
      requested: '2.13',
      upstream: '2.13',
      action: 'pass',
      responseHeaders: {},
    })
    expect(versioning.snapshot().versions.find((v) => v.version === '2.13')).toMatchObject({
      state: 'unknown',
      inCalendar: false,
      requests: 1,
    })
  })
})
