import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { DEFAULT_CATALOG_FILE, loadCatalog, readCatalogFile } from '../../src/catalog/index.js'

// The API's facts as the repository keeps them (docs/api/limits-and-versions.md, copied from the API description).
const API_PAGE = fileURLToPath(new URL('../../docs/api/limits-and-versions.md', import.meta.url))
const page = readFileSync(API_PAGE, 'utf8')

interface PageRow {
  section: string
  method: string
  path: string
  limit: number | null
}

/** Every row of the tables of §4.1–4.11, one per method, plus endpoints named in §4's notes. */
function pageRows(): PageRow[] {
  const rows: PageRow[] = []
  let section: string | undefined
  for (const line of page.split('\n')) {
    const heading = /^#{2,3} (\d+(?:\.\d+)?)\.? /.exec(line)
    if (heading) {
      section = /^4\.\d+$/.test(heading[1]!) ? heading[1] : undefined
      continue
    }
    if (section === undefined) continue
    const note = /endpoint named ([A-Z]+) (\/\S+) .*its limit is not listed/.exec(line)
    if (note) rows.push({ section, method: note[1]!, path: note[2]!, limit: null })
    if (!line.startsWith('|')) continue
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim())
    if (cells[0] === 'Method' || /^-+$/.test(cells[0]!)) continue
    const [methods, path, limitCell] = cells
    expect(methods, line).toMatch(/^[A-Z]+(?:, [A-Z]+)*$/)
    expect(path, line).toMatch(/^\/\S+$/)
    // a value other than 1, 5 or "–" would need a decision, not a silent default
    expect([undefined, '1', '5', '–'], line).toContain(limitCell)
    const limit = limitCell === undefined || limitCell === '–' ? null : Number(limitCell)
    for (const method of methods!.split(', ')) rows.push({ section, method, path: path!, limit })
  }
  return rows
}

const key = (r: { method: string; path: string; limit: number | null }): string =>
  `${r.method} ${r.path} limit=${r.limit}`

describe('config/endpoints.yaml against docs/api/limits-and-versions.md', () => {
  const rows = pageRows()
  const entries = readCatalogFile(DEFAULT_CATALOG_FILE)

  it('the page parser sees every table of §4.1–4.11 and the /pledgepayments note', () => {
    const sections = new Set(rows.map((r) => r.section))
    expect([...sections]).toEqual(['4.1', '4.2', '4.3', '4.4', '4.5', '4.6', '4.7', '4.8', '4.9', '4.10', '4.11'])
    expect(rows.find((r) => r.path === '/pledgepayments')).toEqual({
      section: '4.3',
      method: 'POST',
      path: '/pledgepayments',
      limit: null,
    })
    // multi-method rows expand: "GET, PUT, PATCH, DELETE | /opportunities/{id}"
    expect(rows.filter((r) => r.path === '/opportunities/{id}').map((r) => r.method)).toEqual([
      'GET',
      'PUT',
      'PATCH',
      'DELETE',
    ])
  })

  it('holds exactly the page rows, with their limits', () => {
    expect(entries.map(key).sort()).toEqual(rows.map(key).sort())
  })

  it('lists each (method, path) once', () => {
    const ids = entries.map((e) => `${e.method} ${e.path}`)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('gives the limit-1 endpoints of §8.4 limit 1 and no other', () => {
    const item = /4\. Limit values: 1 for (.*?); 5 for/.exec(page)
    expect(item).not.toBeNull()
    const named = [...item![1]!.matchAll(/([A-Z]+) (\/\S+?)(?=,| and |$)/g)].map((m) => `${m[1]} ${m[2]}`)
    expect(named).toHaveLength(4)
    const limitOne = entries.filter((e) => e.limit === 1).map((e) => `${e.method} ${e.path}`)
    expect(limitOne.sort()).toEqual(named.sort())
  })

  it('gives `since` exactly where §9 names the version that added an endpoint', () => {
    // §9 "Changes by version", as rules over the page's sections:
    //   2.5  activities PATCH/PUT/DELETE endpoints; payments POST, refund and notes endpoints
    //   2.9  volunteer, group and opportunity endpoints (§4.11)
    //   2.10 custom objects (§4.10); households (§4.2)
    //   2.12 GET /properties/activityCustomStatuses
    expect(page).toContain('- 2.5: activities PATCH/PUT/DELETE endpoints; payments POST, refund and notes endpoints.')
    expect(page).toContain('- 2.9: volunteer, group and opportunity endpoints.')
    expect(page).toMatch(/- 2\.10: .*custom objects; households\./)
    expect(page).toContain('- 2.12: additional activity fields (section 2); GET /properties/activityCustomStatuses.')
    const expectedSince = (r: PageRow): string | undefined => {
      if (r.section === '4.8' && ['PUT', 'PATCH', 'DELETE'].includes(r.method)) return '2.5'
      if (r.section === '4.5' && r.path.startsWith('/payments') && r.method !== 'GET') return '2.5'
      if (r.section === '4.11') return '2.9'
      if (r.section === '4.10' || r.section === '4.2') return '2.10'
      if (r.method === 'GET' && r.path === '/properties/activityCustomStatuses') return '2.12'
      return undefined
    }
    const want = rows.map((r) => `${r.method} ${r.path} since=${expectedSince(r) ?? '-'}`).sort()
    const have = entries.map((e) => `${e.method} ${e.path} since=${e.since ?? '-'}`).sort()
    expect(have).toEqual(want)
  })

  it('compiles: the search endpoints have limit 1, unlisted ones take the default', () => {
    const catalog = loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 7, overrides: {} })
    expect(catalog.endpoints).toHaveLength(rows.length)
    for (const path of ['/accounts/search', '/donations/search', '/events/search', '/orders/search']) {
      const result = catalog.match('POST', path)
      expect(result).toMatchObject({ ok: true, endpoint: { id: `POST ${path}`, limit: 1, limitSource: 'published' } })
    }
    expect(catalog.match('POST', '/activities/search')).toMatchObject({
      ok: true,
      endpoint: { id: 'POST /activities/search', limit: 7, limitSource: 'unlisted' },
    })
  })
})
