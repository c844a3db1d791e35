import { describe, expect, it } from 'vitest'
import { compileCatalog, DEFAULT_CATALOG_FILE, loadCatalog, readCatalogFile } from '../../src/catalog/index.js'

const entries = readCatalogFile(DEFAULT_CATALOG_FILE)

describe('limits.overrides', () => {
  it('replace the limit of a catalog endpoint, published or unlisted', () => {
    const catalog = compileCatalog(entries, {
      defaultLimit: 5,
      overrides: { 'POST /accounts/search': 2, 'GET /accounts/{id}/memberships': 9 },
    })
    expect(catalog.match('POST', '/accounts/search')).toMatchObject({
      ok: true,
      endpoint: { limit: 2, limitSource: 'override' },
    })
    expect(catalog.match('GET', '/accounts/1/memberships')).toMatchObject({
      ok: true,
      endpoint: { limit: 9, limitSource: 'override' },
    })
    // the others keep theirs
    expect(catalog.match('POST', '/donations/search')).toMatchObject({
      ok: true,
      endpoint: { limit: 1, limitSource: 'published' },
    })
    expect(catalog.match('GET', '/groups/list')).toMatchObject({
      ok: true,
      endpoint: { limit: 5, limitSource: 'unlisted' },
    })
  })

  it('apply to an unknown path by its collapsed template', () => {
    const catalog = compileCatalog(entries, { defaultLimit: 5, overrides: { 'GET /reports/{id}/export': 2 } })
    expect(catalog.match('GET', '/Reports/42/export/')).toMatchObject({
      ok: true,
      endpoint: { id: 'GET /reports/{id}/export', limit: 2, limitSource: 'override' },
    })
    expect(catalog.match('GET', '/reports/42/other')).toMatchObject({
      ok: true,
      endpoint: { limit: 5, limitSource: 'unknown' },
    })
  })

  it.each([
    ['GET /accounts/{accountId}/memberships', /did you mean "GET \/accounts\/\{id\}\/memberships"/],
    ['POST /Accounts/search', /did you mean "POST \/accounts\/search"/],
    ['POST /accounts/search/', /did you mean "POST \/accounts\/search"/],
    ['GET /acounts/{id}/contacts', /did you mean "GET \/accounts\/\{id\}\/contacts"\?/],
    ['POST /acount/serch', /did you mean "POST \/accounts\/search"\?/],
    ['GET /campaign', /did you mean "GET \/campaigns"\?/],
    ['GET /reports/{reportId}', /counted as "GET \/reports\/\{id\}"/],
    ['GET /Reports/x', /counted as "GET \/reports\/x"/],
    ['HEAD /reports', /counted as "GET \/reports"/],
    ['GET /reports/../x', /segments are not allowed/],
    ['accounts', /expected "METHOD \/path"/],
  ])('an unknown key %j is an error naming it', (key, hint) => {
    let error: unknown
    try {
      compileCatalog(entries, { defaultLimit: 5, overrides: { [key]: 2 } })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(Error)
    expect((error as { code: string }).code).toBe('SLUICE_CONFIG_UNKNOWN_OVERRIDE')
    expect((error as Error).message).toContain(`limits.overrides: "${key}"`)
    expect((error as Error).message).toMatch(hint)
  })

  it('refuse a limit that is not a whole number ≥ 1', () => {
    expect(() => compileCatalog(entries, { defaultLimit: 5, overrides: { 'POST /accounts/search': 0 } })).toThrow(
      /limits\.overrides "POST \/accounts\/search" must be a whole number ≥ 1, got 0/,
    )
    expect(() => loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 0, overrides: {} })).toThrow(
      /limits\.default must be a whole number ≥ 1/,
    )
  })
})
