import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  calendarStatusOn,
  DEFAULT_CALENDAR_FILE,
  loadCalendar,
  parseCalendar,
  retiredByCalendar,
} from '../../src/versioning/index.js'

// The API's facts as the repository keeps them (docs/api/limits-and-versions.md, copied from the API description).
const API_PAGE = fileURLToPath(new URL('../../docs/api/limits-and-versions.md', import.meta.url))

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
]
/** "September 12, 2026" → "2026-09-12" */
function isoOf(text: string): string {
  const m = /^([A-Z][a-z]+) (\d{1,2}), (\d{4})$/.exec(text)
  expect(m, text).not.toBeNull()
  const month = MONTHS.indexOf(m![1]!) + 1
  expect(month, text).toBeGreaterThan(0)
  return `${m![3]}-${String(month).padStart(2, '0')}-${m![2]!.padStart(2, '0')}`
}

/** The rows of §9's "Version history known" table. */
function pageHistory(): { version: string; event: string; date: string }[] {
  const text = readFileSync(API_PAGE, 'utf8')
  const section = text.slice(text.indexOf('## 9. Versioning'))
  const rows = section
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .map((l) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    )
    .filter((c) => c[0] !== 'Version' && !/^-+$/.test(c[0]!))
  return rows.map(([version, event, date]) => ({ version: version!, event: event!, date: isoOf(date!) }))
}

describe('config/versions.yaml', () => {
  const calendar = loadCalendar(DEFAULT_CALENDAR_FILE)
  const entry = (v: string) => calendar.versions.find((e) => e.version === v)

  it('holds every dated event of §9 of the API page, and API v1', () => {
    const history = pageHistory()
    expect(history.length).toBeGreaterThanOrEqual(16)
    for (const row of history) {
      if (row.version === 'API v1 and legacy webhooks') {
        expect(calendar.apiV1?.retired, 'API v1').toBe(row.date)
      } else if (row.event === 'Retired (410)') {
        expect(entry(row.version)?.retired, `${row.version} retired`).toBe(row.date)
      } else if (row.event === 'Released') {
        expect(entry(row.version)?.released, `${row.version} released`).toBe(row.date)
      } else {
        // "Volunteer endpoints added", "Custom object endpoints added", ...: a dated addition.
        const what = row.event.replace(/ added$/, '').toLowerCase()
        const additions = entry(row.version)?.added ?? []
        expect(
          additions.some((a) => a.on === row.date && a.what.toLowerCase().startsWith(what.split(' ')[0]!)),
          `${row.version}: ${row.event} on ${row.date}`,
        ).toBe(true)
      }
    }
    expect(calendar.apiV1?.retired).toBe('2026-07-11')
  })

  it('lists only versions the API page names, in ascending order, and says what each one added', () => {
    const pageVersions = new Set(pageHistory().map((r) => r.version))
    const listed = calendar.versions.map((e) => e.version)
    for (const v of listed) expect(pageVersions.has(v), v).toBe(true)
    expect(listed).toEqual(['2.1', '2.3', '2.4', '2.5', '2.6', '2.7', '2.8', '2.9', '2.10', '2.11', '2.12'])
    // The "Changes by version" list of §9.
    for (const v of ['2.4', '2.5', '2.6', '2.9', '2.10', '2.11', '2.12'])
      expect(entry(v)?.added.length, v).toBeGreaterThan(0)
    expect(entry('2.12')?.added.map((a) => a.what)).toContain('GET /properties/activityCustomStatuses')
  })

  it('keeps an unquoted 2.10 as "2.10" (YAML would read the number 2.1)', () => {
    const c = parseCalendar('versions:\n  - version: 2.10\n    released: 2024-12-14\n  - version: 2.1\n', 'inline.yaml')
    expect(c.versions.map((e) => e.version)).toEqual(['2.1', '2.10'])
  })
})

describe('a bad calendar stops the start with the entry named', () => {
  const problemsOf = (yaml: string): readonly string[] => {
    try {
      parseCalendar(yaml, 'bad.yaml')
    } catch (err) {
      expect((err as Error).message).toMatch(/^bad\.yaml: /)
      return (err as { problems: readonly string[] }).problems
    }
    throw new Error('expected the calendar to be refused')
  }

  it('names the index and version of each bad entry and what is wrong', () => {
    expect(
      problemsOf(
        [
          'versions:',
          '  - version: 2.x',
          '  - version: 2.4',
          '    retired: 2024-13-01',
          '  - version: 2.5',
          '    released: 2025-01-01',
          '    retired: 2024-01-01',
          '  - version: 2.6',
          '    retierd: 2024-01-01',
          '  - released: 2020-01-01',
        ].join('\n'),
      ),
    ).toEqual([
      'versions[0] (2.x).version: a version <major>.<minor> such as 2.10, got "2.x"',
      'versions[1] (2.4).retired: a date YYYY-MM-DD, got "2024-13-01"',
      'versions[2] (2.5).retired: is before the release date',
      'versions[3] (2.6): unknown key retierd',
      'versions[4].version: missing',
    ])
  })

  it('refuses a version listed twice, a missing list, and text that is not YAML', () => {
    expect(problemsOf('versions:\n  - version: 2.4\n  - version: 2.4\n')).toEqual(['versions[1] (2.4): listed twice'])
    expect(problemsOf('apiV1:\n  retired: 2026-07-11\n')).toEqual(['versions: missing'])
    expect(() => parseCalendar('versions: [', 'bad.yaml')).toThrow(/^bad\.yaml: not valid YAML/)
  })

  it('names the file when it cannot be read', () => {
    expect(() => loadCalendar('/nonexistent/versions.yaml')).toThrow(
      /versions\.calendarFile: cannot read \/nonexistent\/versions\.yaml/,
    )
  })
})

describe('reading the calendar from elsewhere (the simulated upstream, tools)', () => {
  const calendar = loadCalendar()
  it('calendarStatusOn and retiredByCalendar agree with the dates, on each side of 2.9 retiring', () => {
    const before = new Date('2026-09-11T23:59:59Z')
    const on = new Date('2026-09-12T00:00:00Z')
    expect([calendarStatusOn(calendar, '2.9', before), calendarStatusOn(calendar, '2.9', on)]).toEqual([
      'supported',
      'retired',
    ])
    expect([calendarStatusOn(calendar, '2.12', before), calendarStatusOn(calendar, '2.12', on)]).toEqual([
      'unreleased',
      'supported',
    ])
    expect(calendarStatusOn(calendar, '2.2', on)).toBe('unknown')
    const isRetired = retiredByCalendar(calendar)
    expect([isRetired('2.9', before), isRetired('2.9', on), isRetired('2.10', on), isRetired('2.1', before)]).toEqual([
      false,
      true,
      false,
      true,
    ])
  })

  it('the independently read table of the simulated upstream agrees with the calendar on every retirement', async () => {
    const { PUBLISHED_RETIREMENTS } = await import('../../src/sim/index.js')
    const fromCalendar = Object.fromEntries(
      calendar.versions.filter((e) => e.retired).map((e) => [e.version, e.retired]),
    )
    expect(fromCalendar).toEqual(PUBLISHED_RETIREMENTS)
  })
})
