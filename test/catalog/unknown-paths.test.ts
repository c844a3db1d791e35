import { describe, expect, it } from 'vitest'
import { DEFAULT_CATALOG_FILE, isIdLike, loadCatalog } from '../../src/catalog/index.js'

const catalog = loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 3, overrides: {} })

function idOf(method: string, path: string): string {
  const result = catalog.match(method, path)
  if (!result.ok) throw new Error(`${path}: ${result.code}`)
  return result.endpoint.id
}

describe('paths not in the catalog', () => {
  it('get the default limit, keyed by method + collapsed template', () => {
    expect(catalog.match('GET', '/foo/123')).toMatchObject({
      ok: true,
      endpoint: { id: 'GET /foo/{id}', method: 'GET', template: '/foo/{id}', limit: 3, limitSource: 'unknown' },
      path: '/foo/123',
    })
  })

  it('share a key when only ids differ, not otherwise', () => {
    expect(idOf('GET', '/foo/123')).toBe(idOf('GET', '/foo/456'))
    expect(idOf('GET', '/foo/123')).not.toBe(idOf('GET', '/bar/1'))
    expect(idOf('GET', '/foo/123')).not.toBe(idOf('POST', '/foo/123'))
    expect(idOf('GET', '/foo/123/things')).not.toBe(idOf('GET', '/foo/123/other'))
    // unknown sub-resources of known endpoints stay apart from the known endpoint
    expect(idOf('GET', '/accounts/77/unknownThing')).toBe('GET /accounts/{id}/unknownthing')
  })

  it.each([
    ['123', true], // digits
    ['0', true],
    ['a1b2c3', true], // mixed letters and digits
    ['v2', true],
    ['3f2a9c1e-5b7d-4c2a-9e1f-0a1b2c3d4e5f', true], // UUID
    ['abcdefab-abcd-abcd-abcd-abcdefabcdef', true], // UUID without digits
    ['deadbeefcafebabe', true], // 16+ hex letters
    ['john.doe', true], // a dot
    ['a~b', true],
    ['caf%c3%a9', true], // an escape that stays
    ['widgets', false], // plain words stay
    ['listhouseholds', false],
    ['my-thing_x', false],
    ['deadbeef', false], // short hex words stay
  ])('isIdLike(%j) = %s', (segment, expected) => {
    expect(isIdLike(segment)).toBe(expected)
  })

  it('reuses the Endpoint object for a repeated unknown template', () => {
    const a = catalog.match('GET', '/foo/1')
    const b = catalog.match('GET', '/foo/2')
    expect(a.ok && b.ok && a.endpoint === b.endpoint).toBe(true)
  })

  it('keeps working past the cache size (ids stay stable)', () => {
    for (let i = 0; i < 3000; i++)
      catalog.match('GET', `/word${'x'.repeat(i % 50)}/${String.fromCharCode(97 + (i % 26))}`)
    expect(idOf('GET', '/foo/9')).toBe('GET /foo/{id}')
  })
})
