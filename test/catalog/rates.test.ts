import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { compileCatalog, loadCatalog } from '../../src/catalog/index.js'
import { loadSettings } from '../../src/config/load.js'

const dir = mkdtempSync(join(tmpdir(), 'sluice-catalog-rates-'))
const file = (text: string): string => {
  const path = join(dir, `catalog-${Math.random().toString(36).slice(2)}.yaml`)
  writeFileSync(path, text)
  return path
}
const options = { defaultLimit: 5, overrides: {} }

describe('rates in the catalog and in limits.rates', () => {
  it('an endpoint carries its own rate; limits.rates fills the others, "*" every endpoint and unknown path without one', () => {
    const catalog = loadCatalog(
      file(`endpoints:
  - { method: GET, path: '/deals', limit: null, rate: { requests: 100, windowMs: 10000 } }
  - { method: GET, path: '/deals/{id}', limit: 5, rate: { requests: 10, windowMs: 1000, burst: 4 } }
  - { method: POST, path: '/deals', limit: 3 }
  - { method: GET, path: '/owners', limit: null }
`),
      {
        ...options,
        rates: {
          'POST /deals': { requests: 5, windowMs: 1000, burst: 1 },
          '*': { requests: 50, windowMs: 60000, burst: 1 },
        },
      },
    )
    const byId = Object.fromEntries(catalog.endpoints.map((e) => [e.id, e]))
    // a rate and no published limit: N may be in progress, the fair queue still orders the rest
    expect(byId['GET /deals']).toMatchObject({
      limit: 100,
      limitSource: 'unlisted',
      rate: { requests: 100, windowMs: 10000, burst: 1 },
    })
    expect(byId['GET /deals/{id}']).toMatchObject({ limit: 5, rate: { requests: 10, windowMs: 1000, burst: 4 } })
    expect(byId['POST /deals']).toMatchObject({ limit: 3, rate: { requests: 5, windowMs: 1000, burst: 1 } })
    // from "*": the concurrency limit stays limits.default
    expect(byId['GET /owners']).toMatchObject({ limit: 5, rate: { requests: 50, windowMs: 60000 } })
    const unknown = catalog.match('GET', '/nothing/here')
    expect(unknown.ok && unknown.endpoint.rate).toEqual({ requests: 50, windowMs: 60000, burst: 1 })
  })

  it('no rate anywhere: endpoints carry none', () => {
    const catalog = compileCatalog([{ method: 'GET', path: '/x', limit: 5 }], options)
    expect(catalog.endpoints[0]).not.toHaveProperty('rate')
  })

  it.each([
    [`rate: { requests: 0, windowMs: 1000 }`, /endpoints\.0\.rate\.requests/],
    [`rate: { requests: 5, windowMs: 0 }`, /endpoints\.0\.rate\.windowMs/],
    [`rate: { requests: 5, windowMs: 1000, burst: 6 }`, /endpoints\.0\.rate\.burst: must not be above requests/],
    [`rate: { requests: 5, window: 1000 }`, /window/],
  ])('refuses a catalog rate %j', (rate, message) => {
    expect(() => loadCatalog(file(`endpoints:\n  - { method: GET, path: /x, limit: 5, ${rate} }\n`), options)).toThrow(
      message,
    )
  })

  it('refuses a limits.rates key that is no endpoint of the catalog, with a "did you mean"', () => {
    expect(() =>
      compileCatalog([{ method: 'GET', path: '/deals', limit: 5 }], {
        ...options,
        rates: { 'GET /deal': { requests: 1, windowMs: 1000, burst: 1 } },
      }),
    ).toThrow('limits.rates: "GET /deal" is not an endpoint id of the catalog; did you mean "GET /deals"?')
  })

  it('limits.rates from the environment is JSON, validated with the key named', () => {
    const settings = loadSettings({ SLUICE_LIMITS_RATES: '{"*": {"requests": 100, "windowMs": 10000}}' }, {})
    expect(settings.limits.rates).toEqual({ '*': { requests: 100, windowMs: 10000, burst: 1 } })
    expect(settings.limits.rateMarginMs).toBe(100)
    expect(() => loadSettings({ SLUICE_LIMITS_RATES: '{"*": {"requests": 0, "windowMs": 10000}}' }, {})).toThrow(
      /limits\.rates.*SLUICE_LIMITS_RATES/,
    )
  })
})
