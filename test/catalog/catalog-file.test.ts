import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { compileCatalog, loadCatalog } from '../../src/catalog/index.js'

const dir = mkdtempSync(join(tmpdir(), 'sluice-catalog-'))
let n = 0
function file(text: string): string {
  const path = join(dir, `catalog-${n++}.yaml`)
  writeFileSync(path, text)
  return path
}
const options = { defaultLimit: 5, overrides: {} }

describe('loading a catalog file', () => {
  it('loads a valid file', () => {
    const catalog = loadCatalog(
      file(`endpoints:\n  - { method: GET, path: '/things/{id}', limit: 5, since: '2.10' }\n`),
      options,
    )
    expect(catalog.endpoints).toEqual([
      {
        id: 'GET /things/{id}',
        method: 'GET',
        template: '/things/{id}',
        limit: 5,
        limitSource: 'published',
        since: '2.10',
      },
    ])
  })

  it.each([
    ['not: [valid', /is not valid YAML/],
    ['endpoints: []', /endpoints: Too small/i],
    [`endpoints:\n  - { method: get, path: /x, limit: 5 }`, /endpoints\.0\.method: an upper-case HTTP method/],
    [`endpoints:\n  - { method: GET, path: 'x/{id}', limit: 5 }`, /endpoints\.0\.path: a path template/],
    [`endpoints:\n  - { method: GET, path: '/x/{id', limit: 5 }`, /endpoints\.0\.path/],
    [`endpoints:\n  - { method: GET, path: /x, limit: 0 }`, /endpoints\.0\.limit/],
    [`endpoints:\n  - { method: GET, path: /x }`, /endpoints\.0\.limit/],
    [`endpoints:\n  - { method: GET, path: /x, limit: 5, since: 2.10 }`, /endpoints\.0\.since/],
    [`endpoints:\n  - { method: GET, path: /x, limit: 5, limt: 1 }`, /limt/],
  ])('refuses %j', (text, message) => {
    expect(() => loadCatalog(file(text), options)).toThrow(message)
  })

  it('refuses a missing file with its name', () => {
    expect(() => loadCatalog(join(dir, 'missing.yaml'), options)).toThrow(
      /cannot read the endpoint catalog .*missing\.yaml/,
    )
  })

  it('refuses entries that would match the same paths', () => {
    expect(() =>
      compileCatalog(
        [
          { method: 'GET', path: '/x', limit: 5 },
          { method: 'GET', path: '/x', limit: 1 },
        ],
        options,
      ),
    ).toThrow(/lists GET \/x twice/)
    expect(() =>
      compileCatalog(
        [
          { method: 'GET', path: '/x/{a}', limit: 5 },
          { method: 'GET', path: '/x/{b}', limit: 1 },
        ],
        options,
      ),
    ).toThrow(/GET \/x\/\{a\} and GET \/x\/\{b\}, which match the same paths/)
    expect(() =>
      compileCatalog(
        [
          { method: 'GET', path: '/customObjects', limit: 5 },
          { method: 'POST', path: '/customObjects', limit: 5 },
          { method: 'POST', path: '/customobjects/{id}', limit: 5 },
        ],
        options,
      ),
    ).toThrow(/spells one segment both "customObjects" and "customobjects"/)
  })

  it('carries the error code SLUICE_CATALOG_INVALID', () => {
    let code: unknown
    try {
      loadCatalog(file('endpoints: 3'), options)
    } catch (err) {
      code = (err as { code?: unknown }).code
    }
    expect(code).toBe('SLUICE_CATALOG_INVALID')
  })
})
