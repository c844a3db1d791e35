import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { describe, expect, it } from 'vitest'
import { loadSettings, originOf } from '../../src/config/load.js'
import { resolveUpstreams } from '../../src/upstreams/index.js'

/*
 * docs/configuration.md, "When a setting is wrong": every malformed upstream, catalog or rate setting
 * is refused with the path of the field (`upstreams.1.catalog.default`), where it came from (the file
 * and its key, or the env var) and what to write — never zod's bare "Invalid input".
 */

const dir = mkdtempSync(join(tmpdir(), 'sluice-upstream-errors-'))
const good = { name: 'trial', prefix: '/trial/v2', url: 'https://trial.neoncrm.com/v2', profile: 'neon-v2' }
const own = { name: 'reports', prefix: '/reports/v1', url: 'https://reports.example.com/v1' }
const header = { from: 'header', header: 'x-account-id' }

/** [what is wrong, the second upstream, what the error must say after the path and origin] */
const CASES: [string, Record<string, unknown>, string, string][] = [
  ['catalog without default', { ...own, catalog: { per: 'upstream' } }, 'catalog.default', 'required: the limit of every path not listed'],
  ['default not a whole number', { ...own, catalog: { default: 2.5 } }, 'catalog.default', 'a whole number ≥ 1'],
  ['default zero', { ...own, catalog: { default: 0 } }, 'catalog.default', 'a whole number ≥ 1'],
  ['per misspelt', { ...own, catalog: { default: 4, per: 'account' } }, 'catalog.per', 'endpoint (each path not listed its own key) or upstream'],
  ['catalog a number', { ...own, catalog: 4 }, 'catalog', 'the path of a catalog file, or a catalog such as { default: 4 }'],
  ['rate without requests', { ...own, catalog: { default: 4, rate: { windowMs: 10000 } } }, 'catalog.rate.requests', 'a whole number of requests ≥ 1'],
  ['rate window in seconds as text', { ...own, catalog: { default: 4, rate: { requests: 100, windowMs: '10s' } } }, 'catalog.rate.windowMs', 'the window in ms'],
  ['burst above requests', { ...own, catalog: { default: 4, rate: { requests: 2, windowMs: 1000, burst: 3 } } }, 'catalog.rate.burst', 'must not be above requests'],
  ['endpoint limit zero', { ...own, catalog: { default: 4, endpoints: [{ method: 'GET', path: '/x', limit: 0 }] } }, 'catalog.endpoints.0.limit', 'or null for the catalog\'s default'],
  ['endpoint path no template', { ...own, catalog: { default: 4, endpoints: [{ method: 'GET', path: 'x', limit: 1 }] } }, 'catalog.endpoints.0.path', 'a path template'],
  ['endpoint rate bad', { ...own, catalog: { default: 4, endpoints: [{ method: 'GET', path: '/x', limit: 1, rate: { requests: 0, windowMs: 1 } }] } }, 'catalog.endpoints.0.rate.requests', 'a whole number of requests ≥ 1'],
  ['instance from unknown', { ...own, catalog: { default: 4 }, instance: { from: 'account' } }, 'instance.from', 'from: one of basic, header (with header:)'],
  ['instance header missing', { ...own, catalog: { default: 4 }, instance: { from: 'header' } }, 'instance.header', 'required: a valid HTTP header name'],
  ['instance segment zero', { ...own, catalog: { default: 4 }, instance: { from: 'path', segment: 0 } }, 'instance.segment', 'the path segment below the prefix'],
  ['name missing', { prefix: '/reports/v1', url: own.url, catalog: { default: 4 } }, 'name', 'required: lower-case letters'],
  ['name with capitals', { ...own, name: 'Reports', catalog: { default: 4 } }, 'name', 'lower-case letters, digits and -'],
  ['prefix without slash', { ...own, prefix: 'reports', catalog: { default: 4 } }, 'prefix', 'the path apps call, such as /reports/v1'],
  ['url not http', { ...own, url: 'ftp://x.example.com', catalog: { default: 4 } }, 'url', 'an http or https URL'],
  ['retry status 200', { ...own, catalog: { default: 4 }, retryWithRetryAfter: [200] }, 'retryWithRetryAfter.0', 'an HTTP status 400-599'],
  ['scheme misspelt', { ...own, catalog: { default: 4 }, instance: header, credentials: { scheme: 'token' } }, 'credentials.scheme', 'basic, bearer, or none'],
  ['credential header bad', { ...own, catalog: { default: 4 }, credentials: { header: 'x api key' } }, 'credentials.header', 'a valid HTTP header name'],
  ['no catalog, no profile', { ...own }, 'catalog', 'needs a catalog (inline or a file) or a profile'],
  ['unknown profile', { ...own, profile: 'neon-v3' }, 'profile', 'no such profile; there are neon-v2, github-rest'],
]

function errorOf(load: () => unknown): string {
  try {
    load()
  } catch (err) {
    return (err as Error).message
  }
  throw new Error('the settings were accepted')
}

describe('an upstream setting that is wrong is refused naming its path, its origin and what to write', () => {
  it.each(CASES)('%s, in the settings file', (_what, bad, field, says) => {
    const file = join(dir, 'settings.yaml')
    writeFileSync(file, stringify({ upstreams: [good, bad] }))
    const message = errorOf(() => loadSettings({ SLUICE_CONFIG: file }))
    const path = `upstreams.1.${field}`
    expect(message).toContain(`${path} (file ${file}, key ${path})`)
    expect(message).toContain(says)
    expect(message).not.toMatch(/Invalid input(?!:)/)
  })

  it.each(CASES)('%s, in SLUICE_UPSTREAMS', (_what, bad, field, says) => {
    const message = errorOf(() => loadSettings({ SLUICE_UPSTREAMS: JSON.stringify([good, bad]) }))
    expect(message).toContain(`upstreams.1.${field} (env SLUICE_UPSTREAMS)`)
    expect(message).toContain(says)
  })

  it('an unknown key in a catalog: named with its path and origin', () => {
    const bad = { ...own, catalog: { default: 4, limit: 4 } }
    const message = errorOf(() => loadSettings({ SLUICE_UPSTREAMS: JSON.stringify([good, bad]) }))
    expect(message).toBe(
      'invalid setting: unknown setting in upstreams.1.catalog: limit (env SLUICE_UPSTREAMS, key upstreams.1.catalog.limit); known here: endpoints, default, per, rate',
    )
  })

  it('limits.rates: the endpoint id and the field', () => {
    const message = errorOf(() =>
      loadSettings({ SLUICE_LIMITS_RATES: JSON.stringify({ '*': { requests: 100, windowMs: 0 } }) }),
    )
    expect(message).toContain('limits.rates.*.windowMs (env SLUICE_LIMITS_RATES): the window in ms')
  })

  it('a catalog file without default: the setting, its origin, the file and the field in it', () => {
    const catalog = join(dir, 'reports.yaml')
    writeFileSync(catalog, stringify({ per: 'upstream' }))
    const file = join(dir, 'with-file.yaml')
    writeFileSync(file, stringify({ upstreams: [good, { ...own, catalog }] }))
    const settings = loadSettings({ SLUICE_CONFIG: file })
    const message = errorOf(() => resolveUpstreams(settings, (key) => originOf(settings, key)))
    expect(message).toBe(
      `invalid setting: upstreams.1.catalog (file ${file}, key upstreams.1.catalog): the catalog ${catalog} is invalid: default: required: the limit of every path not listed, a whole number ≥ 1 (e.g. default: 4)`,
    )
  })

  it('an inline catalog that lists an endpoint twice: the setting and its origin', () => {
    const twice = { method: 'GET', path: '/x', limit: 1 }
    const settings = loadSettings({
      SLUICE_UPSTREAMS: JSON.stringify([good, { ...own, catalog: { default: 4, endpoints: [twice, twice] } }]),
    })
    const message = errorOf(() => resolveUpstreams(settings, (key) => originOf(settings, key)))
    expect(message).toContain('upstreams.1.catalog (env SLUICE_UPSTREAMS): the endpoint catalog lists GET /x twice')
  })
})

describe('an unknown key under upstreams says which keys are known there', () => {
  it.each([
    [{ ...own, catalog: { default: 4 }, limit: 4 }, 'upstreams.1: limit', 'name, prefix, url, profile, catalog, instance, retryWithRetryAfter, credentials'],
    [{ ...own, catalog: { default: 4, rate: { requests: 1, windowMs: 1, window: 1 } } }, 'upstreams.1.catalog.rate: window', 'requests, windowMs, burst'],
    [{ ...own, catalog: { default: 4, endpoints: [{ method: 'GET', path: '/x', limit: 1, max: 1 }] } }, 'upstreams.1.catalog.endpoints.0: max', 'method, path, limit, rate, since'],
    [{ ...own, catalog: { default: 4 }, credentials: { inject: false, key: 'x' } }, 'upstreams.1.credentials: key', 'inject, header, scheme'],
  ])('%#', (bad, where, known) => {
    const message = errorOf(() => loadSettings({ SLUICE_UPSTREAMS: JSON.stringify([good, bad]) }))
    expect(message).toContain(`unknown setting in ${where} (env SLUICE_UPSTREAMS`)
    expect(message).toContain(`known here: ${known}`)
  })
})
