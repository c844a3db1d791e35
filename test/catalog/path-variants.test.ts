import { describe, expect, it } from 'vitest'
import { DEFAULT_CATALOG_FILE, loadCatalog } from '../../src/catalog/index.js'

const catalog = loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 5, overrides: {} })

describe('no variant of a path escapes its endpoint', () => {
  it.each([
    ['/accounts/search', '/accounts/search'],
    ['/accounts/search/', '/accounts/search'], // trailing slash
    ['//accounts/search', '/accounts/search'], // doubled slashes
    ['/accounts//search', '/accounts/search'],
    ['/accounts/search//', '/accounts/search'],
    ['/ACCOUNTS/Search', '/accounts/search'], // letter case of static segments
    ['/aCcOuNtS/sEaRcH/', '/accounts/search'],
    ['/%61ccounts/search', '/accounts/search'], // %61 = a (unreserved)
    ['/%41CCOUNTS/%73%65%61%72%63%68', '/accounts/search'], // %41 = A
    ['/accounts/search;jsessionid=abc', '/accounts/search;jsessionid=abc'], // a `;` path parameter (Java servers drop it)
    ['/accounts/sea%72ch;x', '/accounts/search;x'],
  ])('POST %s → POST /accounts/search (limit 1), forwarded as %s', (raw, canonical) => {
    expect(catalog.match('POST', raw)).toEqual({
      ok: true,
      endpoint: {
        id: 'POST /accounts/search',
        method: 'POST',
        template: '/accounts/search',
        limit: 1,
        limitSource: 'published',
      },
      path: canonical,
    })
  })

  it('folds non-ASCII letters as a case-insensitive router would (KELVIN SIGN is k)', () => {
    expect(catalog.match('POST', '/accounts/lin%E2%84%AA')).toMatchObject({
      ok: true,
      endpoint: { id: 'POST /accounts/link' },
      path: '/accounts/link',
    })
  })

  it('keeps parameter segments as given, decoding only unreserved escapes', () => {
    const cases: [string, string][] = [
      ['/customObjects/MyAlias', '/customObjects/MyAlias'], // parameter case kept
      ['/customobjects/foo%7E', '/customObjects/foo~'], // %7E = ~
      ['/customObjects/foo%7e', '/customObjects/foo~'],
      ['/customObjects/%41bc', '/customObjects/Abc'], // %41 = A
      ['/customObjects/caf%c3%a9', '/customObjects/caf%C3%A9'], // other escapes kept, hex upper-cased
      ['/customObjects/a%20b', '/customObjects/a%20b'],
      ['/customObjects/a%3bb', '/customObjects/a%3Bb'], // an encoded ; is data, not a parameter
    ]
    for (const [raw, canonical] of cases) {
      const result = catalog.match('GET', raw)
      expect(result, raw).toMatchObject({
        ok: true,
        endpoint: { id: 'GET /customObjects/{idOrApiAlias}' },
        path: canonical,
      })
    }
  })

  it('forwards an already canonical path unchanged (same string)', () => {
    const raw = '/accounts/123/contacts/456'
    const result = catalog.match('GET', raw)
    expect(result).toMatchObject({ ok: true, endpoint: { id: 'GET /accounts/{id}/contacts/{contactId}' }, path: raw })
  })

  it('maps every variant of an unknown path to one key as well', () => {
    const ids = ['/foo/bar/1', '/FOO/Bar/2/', '//foo/%62ar/3', '/foo/bar;x/4'].map((raw) => {
      const result = catalog.match('GET', raw)
      return result.ok ? result.endpoint.id : result.code
    })
    expect(new Set(ids)).toEqual(new Set(['GET /foo/bar/{id}']))
  })

  it('canonicalises unknown paths too (case kept, escapes normalised, slashes collapsed)', () => {
    expect(catalog.match('GET', '//Foo/%62ar/x%2a/')).toMatchObject({ ok: true, path: '/Foo/bar/x%2A' })
    expect(catalog.match('GET', '')).toMatchObject({ ok: true, path: '/', endpoint: { id: 'GET /' } })
  })
})
