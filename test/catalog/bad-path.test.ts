import { describe, expect, it } from 'vitest'
import { badPathError, DEFAULT_CATALOG_FILE, loadCatalog, type BadPathCode } from '../../src/catalog/index.js'

const catalog = loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 5, overrides: {} })

const cases: [string, BadPathCode, RegExp][] = [
  ['/accounts/../search', 'SLUICE_BAD_PATH_TRAVERSAL', /"\." and "\.\." segments are not allowed/],
  ['/accounts/./search', 'SLUICE_BAD_PATH_TRAVERSAL', /segments are not allowed/],
  ['/..', 'SLUICE_BAD_PATH_TRAVERSAL', /segments are not allowed/],
  ['/accounts/%2e%2e/search', 'SLUICE_BAD_PATH_TRAVERSAL', /segments are not allowed/],
  ['/accounts/%2E/search', 'SLUICE_BAD_PATH_TRAVERSAL', /segments are not allowed/],
  ['/accounts/.%2E/search', 'SLUICE_BAD_PATH_TRAVERSAL', /segments are not allowed/],
  ['/accounts/..;x/search', 'SLUICE_BAD_PATH_TRAVERSAL', /segments are not allowed/],
  ['/accounts%2Fsearch', 'SLUICE_BAD_PATH_SEPARATOR', /encoded "\/" \(%2F\) at offset 9/],
  ['/accounts%2fsearch', 'SLUICE_BAD_PATH_SEPARATOR', /encoded "\/"/],
  ['/accounts%5Csearch', 'SLUICE_BAD_PATH_SEPARATOR', /encoded "\\"/],
  ['/accounts\\search', 'SLUICE_BAD_PATH_SEPARATOR', /holds a "\\" at offset 9/],
  ['/accounts/search\u0000', 'SLUICE_BAD_PATH_CONTROL_CHAR', /control character 0x00 at offset 16/],
  ['/accounts/\tsearch', 'SLUICE_BAD_PATH_CONTROL_CHAR', /control character 0x09/],
  ['/accounts/search\u007f', 'SLUICE_BAD_PATH_CONTROL_CHAR', /control character 0x7F/],
  ['/accounts/search%00', 'SLUICE_BAD_PATH_CONTROL_CHAR', /encoded control character 0x00 at offset 16/],
  ['/accounts/search%0a', 'SLUICE_BAD_PATH_CONTROL_CHAR', /encoded control character 0x0A/],
  ['/accounts/search%0D%0A', 'SLUICE_BAD_PATH_CONTROL_CHAR', /0x0D/],
  ['/accounts/search%1F', 'SLUICE_BAD_PATH_CONTROL_CHAR', /0x1F/],
  ['/accounts/search%7F', 'SLUICE_BAD_PATH_CONTROL_CHAR', /0x7F/],
  ['/accounts/search%', 'SLUICE_BAD_PATH_ENCODING', /Malformed percent-encoding at offset 16/],
  ['/accounts/search%4', 'SLUICE_BAD_PATH_ENCODING', /Malformed percent-encoding/],
  ['/accounts/%zzsearch', 'SLUICE_BAD_PATH_ENCODING', /"%zz"/],
  ['/accounts/%%41', 'SLUICE_BAD_PATH_ENCODING', /Malformed/],
  ['/accounts/;x/search', 'SLUICE_BAD_PATH_SEGMENT', /only a ";" parameter/],
  ['accounts/search', 'SLUICE_BAD_PATH', /must start with "\/"/],
]

describe('bad paths are refused with their own code', () => {
  it.each(cases)('%j → %s', (raw, code, message) => {
    const result = catalog.match('POST', raw)
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.code).toBe(code)
    expect(result.message).toMatch(message)
    // messages never echo raw control characters into logs or bodies
    expect([...result.message].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f)).toBe(false)
  })

  it('becomes a 400 error value with the same code and message', () => {
    const result = catalog.match('GET', '/a/%2e%2e/b')
    if (result.ok) throw new Error('expected a refusal')
    const err = badPathError(result)
    expect(err).toBeInstanceOf(Error)
    expect(err.statusCode).toBe(400)
    expect(err.code).toBe('SLUICE_BAD_PATH_TRAVERSAL')
    expect(err.message).toBe(result.message)
  })

  it('accepts dots that are not whole segments', () => {
    expect(catalog.match('GET', '/customObjects/a..b')).toMatchObject({
      ok: true,
      endpoint: { id: 'GET /customObjects/{idOrApiAlias}' },
    })
    expect(catalog.match('GET', '/customObjects/...')).toMatchObject({ ok: true, path: '/customObjects/...' })
  })
})
