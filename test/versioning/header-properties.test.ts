import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compareVersions, MAX_VERSION_LENGTH, parseVersion, readVersionHeader } from '../../src/versioning/version.js'

// Property tests of the version-header parser (README "API versions": one `<major>.<minor>` of at most 16 characters).

describe('the version-header parser: properties', () => {
  it('never throws; whatever it accepts is one <major>.<minor> of at most 16 characters', () => {
    const value = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.array(fc.string({ maxLength: 20 }), { maxLength: 3 }),
      fc.tuple(fc.nat(), fc.nat()).map(([a, b]) => ` ${a}.${b}\t`),
    )
    fc.assert(
      fc.property(value, (v) => {
        const read = readVersionHeader(v)
        if (read.ok) {
          expect(read.version.text).toMatch(/^(0|[1-9]\d*)\.(0|[1-9]\d*)$/)
          expect(read.version.text.length).toBeLessThanOrEqual(MAX_VERSION_LENGTH)
        } else {
          expect(['empty', 'several', 'too_long', 'format']).toContain(read.problem)
        }
      }),
      { numRuns: 2_000 },
    )
  })

  it('round-trips every version, with any surrounding whitespace, and orders them numerically', () => {
    fc.assert(
      fc.property(
        fc.nat(9_999),
        fc.nat(9_999),
        fc.nat(9_999),
        fc.nat(9_999),
        fc.constantFrom('', ' ', '\t', '  '),
        (a, b, c, d, pad) => {
          const read = readVersionHeader(`${pad}${a}.${b}${pad}`)
          expect(read).toEqual({ ok: true, version: { text: `${a}.${b}`, major: a, minor: b } })
          const x = parseVersion(`${a}.${b}`)!
          const y = parseVersion(`${c}.${d}`)!
          expect(Math.sign(compareVersions(x, y))).toBe(Math.sign(a - c || b - d))
        },
      ),
      { numRuns: 3_000 },
    )
  })

  it('a repeated header (joined with ", " by Node, or an array) is refused as several', () => {
    fc.assert(
      fc.property(fc.nat(99), fc.nat(99), fc.nat(99), fc.nat(99), (a, b, c, d) => {
        expect(readVersionHeader(`${a}.${b}, ${c}.${d}`)).toMatchObject({ ok: false, problem: 'several' })
        expect(readVersionHeader([`${a}.${b}`, `${c}.${d}`])).toMatchObject({ ok: false, problem: 'several' })
      }),
      { numRuns: 500 },
    )
  })
})
