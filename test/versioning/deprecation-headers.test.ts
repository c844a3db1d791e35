import { describe, expect, it } from 'vitest'
import { PLAIN, versioningAt } from './helpers.js'

describe('Deprecation (RFC 9745) and Sunset (RFC 8594) for a version retiring in the future', () => {
  it('Deprecation is a structured-field date @<unix seconds>, Sunset an HTTP-date of the retirement day', () => {
    const { versioning } = versioningAt('2026-03-01T09:30:00Z')
    const headers = versioning.decide('2.9', PLAIN).responseHeaders
    expect(headers.deprecation).toMatch(/^@\d+$/)
    // The deprecation date is 2.10's release, when 2.9 got its successor.
    expect(new Date(Number(headers.deprecation!.slice(1)) * 1000).toISOString()).toBe('2024-12-14T00:00:00.000Z')
    expect(headers.sunset).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/)
    expect(new Date(headers.sunset!).toISOString()).toBe('2026-09-12T00:00:00.000Z')
  })

  it('a version with no retirement ahead gets neither', () => {
    const { versioning } = versioningAt('2026-03-01T09:30:00Z')
    for (const v of ['2.10', '2.11', '2.13']) expect(versioning.decide(v, PLAIN).responseHeaders, v).toEqual({})
  })

  it('a retirement announced in the settings: Sunset on that day, deprecated since the next release (2.12)', () => {
    const { versioning } = versioningAt('2027-01-01T00:00:00Z', { retirements: { '2.11': '2027-06-30' } })
    expect(versioning.decide('2.11', PLAIN).responseHeaders).toEqual({
      deprecation: `@${Date.UTC(2026, 8, 12) / 1000}`,
      sunset: 'Wed, 30 Jun 2027 00:00:00 GMT',
    })
  })

  it('a calendar `deprecated:` day wins; with no later release, the retirement day itself is used', () => {
    const calendar = [
      'versions:',
      '  - version: 3.0',
      '    released: 2026-01-01',
      '    deprecated: 2026-02-01',
      '    retired: 2026-12-01',
      '  - version: 3.1',
      '    retired: 2027-01-01',
    ].join('\n')
    const { versioning } = versioningAt('2026-06-01T00:00:00Z', {}, calendar)
    expect(versioning.decide('3.0', PLAIN).responseHeaders.deprecation).toBe(`@${Date.UTC(2026, 1, 1) / 1000}`)
    expect(versioning.decide('3.1', PLAIN).responseHeaders).toEqual({
      deprecation: `@${Date.UTC(2027, 0, 1) / 1000}`,
      sunset: 'Fri, 01 Jan 2027 00:00:00 GMT',
    })
  })

  it('can be switched off', () => {
    const { versioning } = versioningAt('2026-03-01T09:30:00Z', { deprecationHeaders: false })
    expect(versioning.decide('2.9', PLAIN).responseHeaders).toEqual({})
  })
})
