import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DEFAULT_CATALOG_FILE, loadCatalog, normalisePath } from '../../src/catalog/index.js'

// Property tests of the path normaliser and the matcher (README "Endpoints and limits"): whatever the
// path, no exception, a canonical form that is its own canonical form, and no variant of a path that
// lands on another endpoint than the path itself.

const catalog = loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 5, overrides: {} })

// Characters that matter to the normaliser, mixed with plain ones.
const PIECES = [
  '/',
  '//',
  '.',
  '..',
  '%',
  '%2e',
  '%2E',
  '%2f',
  '%5C',
  '%41',
  '%7e',
  '%c3%a9',
  '%zz',
  ';',
  ';x',
  '\\',
  '\x00',
  '\x7f',
  'é',
  'K',
  'ſ',
  'a',
  'Z',
  '1',
  '-',
  '~',
  '_',
  '?',
]
const pathChars = fc.oneof(
  fc.constantFrom(...PIECES),
  fc.string({ maxLength: 3 }),
  fc.string({ unit: 'binary', maxLength: 2 }),
)
const rawPath = fc.array(pathChars, { maxLength: 24 }).map((parts) => '/' + parts.join(''))

const HEX2 = /%[0-9A-F]{2}/g
const UNRESERVED_ESCAPE = /%(4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9A]|3[0-9]|2D|2E|5F|7E)/

describe('normalisePath: properties over arbitrary paths', () => {
  it('never throws, and a refusal always has a SLUICE_BAD_PATH code', () => {
    fc.assert(
      fc.property(fc.oneof(rawPath, fc.string(), fc.string({ unit: 'binary' })), (raw) => {
        const result = normalisePath(raw)
        if (!result.ok) expect(result.code).toMatch(/^SLUICE_BAD_PATH/)
      }),
      { numRuns: 5_000 },
    )
  })

  it('what it accepts is safe to forward: no dot segments, separators, control characters or stray escapes', () => {
    fc.assert(
      fc.property(rawPath, (raw) => {
        const result = normalisePath(raw)
        if (!result.ok) return
        for (const segment of result.segments) {
          expect(segment).not.toBe('')
          expect(segment.split(';')[0]).not.toMatch(/^\.{1,2}$/)
          expect(
            [...segment].some(
              (ch) => ch === '/' || ch === '\\' || ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f,
            ),
          ).toBe(false)
          // only what RFC 3986 allows in a path segment (§3.3): no `#`, space, `"<>[]^`{|}` or non-ASCII
          expect(segment).toMatch(/^([A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-F]{2})+$/)
          // every % starts an upper-case escape, and no unreserved character stays escaped
          expect(segment.replace(HEX2, '')).not.toContain('%')
          expect(segment).not.toMatch(UNRESERVED_ESCAPE)
        }
      }),
      { numRuns: 5_000 },
    )
  })

  it('is idempotent: the canonical path normalises to itself, unchanged', () => {
    fc.assert(
      fc.property(rawPath, (raw) => {
        const first = normalisePath(raw)
        if (!first.ok) return
        const again = normalisePath('/' + first.segments.join('/'))
        expect(again).toEqual({
          ok: true,
          segments: first.segments,
          keys: first.keys,
          changed: first.segments.length === 0,
        })
      }),
      { numRuns: 5_000 },
    )
  })
})

// Catalog paths with their parameters filled in, and spellings of them that must match the same endpoint.
const endpoints = catalog.endpoints.filter((e) => !e.template.includes('{') || /^\/[A-Za-z]/.test(e.template))
const concretePath = fc
  .record({ endpoint: fc.constantFrom(...endpoints), id: fc.stringMatching(/^[A-Za-z0-9]{1,8}$/) })
  .map(({ endpoint, id }) => ({ endpoint, path: endpoint.template.replace(/\{[^}]+\}/g, id) }))

const encodeUnreserved = (s: string, at: number): string => {
  const i = at % Math.max(1, s.length)
  const c = s[i]
  return c !== undefined && /[A-Za-z0-9]/.test(c)
    ? s.slice(0, i) + '%' + c.charCodeAt(0).toString(16) + s.slice(i + 1)
    : s
}

describe('catalog.match: properties', () => {
  it('never throws, whatever the method and path', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE'),
        rawPath,
        (method, raw) => {
          catalog.match(method, raw)
        },
      ),
      { numRuns: 5_000 },
    )
  })

  it('variants (doubled and trailing slashes, letter case of static segments, escaped unreserved characters) match the same endpoint', () => {
    fc.assert(
      fc.property(concretePath, fc.nat(), fc.boolean(), fc.boolean(), ({ endpoint, path }, at, doubled, upper) => {
        const method = endpoint.id.split(' ')[0]!
        const plain = catalog.match(method, path)
        expect(plain.ok).toBe(true)
        if (!plain.ok) return
        let variant = encodeUnreserved(path, at)
        if (doubled) variant = variant.replace('/', '//') + '/'
        if (upper)
          variant = variant
            .split('/')
            .map((s, i) => (i === 1 ? s.toUpperCase() : s))
            .join('/')
        const matched = catalog.match(method, variant)
        expect(matched.ok && matched.endpoint.id).toBe(plain.endpoint.id)
      }),
      { numRuns: 3_000 },
    )
  })

  it('the path it forwards matches the same endpoint again (a fixed point)', () => {
    fc.assert(
      fc.property(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'), rawPath, (method, raw) => {
        const first = catalog.match(method, raw)
        if (!first.ok) return
        const again = catalog.match(method, first.path)
        expect(again.ok && again.endpoint.id).toBe(first.endpoint.id)
        expect(again.ok && again.path).toBe(first.path)
      }),
      { numRuns: 5_000 },
    )
  })
})
