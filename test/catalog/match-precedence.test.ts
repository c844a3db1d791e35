import { describe, expect, it } from 'vitest'
import { DEFAULT_CATALOG_FILE, loadCatalog } from '../../src/catalog/index.js'

const catalog = loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 5, overrides: {} })

function endpointOf(method: string, path: string): string {
  const result = catalog.match(method, path)
  if (!result.ok) throw new Error(`${method} ${path} refused: ${result.code}`)
  return result.endpoint.id
}

describe('static segments beat parameters', () => {
  it.each([
    ['GET', '/accounts/search/outputFields', 'GET /accounts/search/outputFields'],
    ['GET', '/accounts/search/searchFields', 'GET /accounts/search/searchFields'],
    ['POST', '/accounts/search', 'POST /accounts/search'],
    ['POST', '/accounts/link', 'POST /accounts/link'],
    ['GET', '/groups/list', 'GET /groups/list'],
    ['GET', '/customObjects/masterDetailObjects', 'GET /customObjects/masterDetailObjects'],
    ['GET', '/customObjects/lookUpObjects', 'GET /customObjects/lookUpObjects'],
    ['GET', '/households/listHouseholds', 'GET /households/listHouseholds'],
    ['GET', '/households/listRelationTypes', 'GET /households/listRelationTypes'],
    ['POST', '/eventRegistrations/calculate', 'POST /eventRegistrations/calculate'],
    ['POST', '/orders/search', 'POST /orders/search'],
  ])('%s %s → %s', (method, path, id) => {
    expect(endpointOf(method, path)).toBe(id)
  })

  it.each([
    ['GET', '/groups/42', 'GET /groups/{id}'],
    ['PUT', '/groups/list', 'PUT /groups/{id}'], // no static PUT /groups/list: the parameter takes it
    ['GET', '/customObjects/myObject', 'GET /customObjects/{idOrApiAlias}'],
    ['GET', '/events/7/tickets/9', 'GET /events/{id}/tickets/{ticketId}'],
    ['GET', '/orders/12', 'GET /orders/{id}'],
    ['POST', '/orders/12/payments', 'POST /orders/{orderId}/payments'],
    ['GET', '/accounts/123/contacts', 'GET /accounts/{id}/contacts'],
  ])('a parameter segment still matches: %s %s → %s', (method, path, id) => {
    expect(endpointOf(method, path)).toBe(id)
  })
})

describe('backtracking from a static branch that dead-ends', () => {
  it.each([
    // `list` is static under /groups, but /groups/list has no `volunteers` child: it is the {id}
    ['GET', '/groups/list/volunteers', 'GET /groups/{id}/volunteers'],
    ['POST', '/groups/list/addVolunteers', 'POST /groups/{id}/addVolunteers'],
    // `search` is static under /accounts, but no /accounts/search/contacts: it is the {id}
    ['GET', '/accounts/search/contacts', 'GET /accounts/{id}/contacts'],
    ['GET', '/accounts/search/contacts/5', 'GET /accounts/{id}/contacts/{contactId}'],
    ['GET', '/customObjects/masterDetailObjects/fields', 'GET /customObjects/{idOrApiAlias}/fields'],
    ['GET', '/events/search/tickets', 'GET /events/{id}/tickets'],
  ])('%s %s → %s', (method, path, id) => {
    expect(endpointOf(method, path)).toBe(id)
  })
})

describe('methods are separate endpoints', () => {
  it('GET /accounts/search is not POST /accounts/search', () => {
    const result = catalog.match('GET', '/accounts/search')
    expect(result).toMatchObject({ ok: true, endpoint: { id: 'GET /accounts/search', limitSource: 'unknown' } })
  })

  it('HEAD counts as GET (same upstream pool)', () => {
    expect(endpointOf('HEAD', '/groups/list')).toBe('GET /groups/list')
    expect(endpointOf('HEAD', '/nothing/here')).toBe('GET /nothing/here')
  })

  it('returns the same Endpoint object for every hit', () => {
    const a = catalog.match('GET', '/groups/1')
    const b = catalog.match('GET', '/groups/2')
    expect(a.ok && b.ok && a.endpoint === b.endpoint).toBe(true)
    expect(catalog.endpoints).toContain(a.ok ? a.endpoint : undefined)
  })
})
