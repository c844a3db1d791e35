import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import { ConfigError } from '../errors/config-error.js'
import { dayOfIso, dayOfMs, type Day } from './days.js'
import { VERSION_PATTERN } from './settings.js'
import { compareVersions, parseVersion } from './version.js'

/** The calendar shipped with sluice (`config/versions.yaml`), found from this file in src/ and in dist/. */
export const DEFAULT_CALENDAR_FILE = fileURLToPath(new URL('../../config/versions.yaml', import.meta.url))

export interface CalendarAddition {
  readonly what: string
  /** when §9 dates the addition after the version's release, YYYY-MM-DD */
  readonly on?: string
}

export interface CalendarEntry {
  /** `<major>.<minor>` */
  readonly version: string
  /** YYYY-MM-DD; absent when not published */
  readonly released?: string
  /** YYYY-MM-DD from which the API answers 410; absent when none is announced */
  readonly retired?: string
  /** YYYY-MM-DD for the `Deprecation` header; absent → the next version's release */
  readonly deprecated?: string
  readonly added: readonly CalendarAddition[]
  /** where `retired` comes from: the calendar file, or `versions.retirements` in the settings */
  readonly retiredBy?: 'calendar' | 'settings'
}

export interface Calendar {
  /** the file it was read from (for messages) */
  readonly source: string
  readonly apiV1?: { readonly retired: string; readonly note?: string }
  /** ascending by version */
  readonly versions: readonly CalendarEntry[]
}

const day = z.iso.date('a date YYYY-MM-DD')
const addition = z.union([z.string().min(1), z.strictObject({ on: day, what: z.string().min(1) })], {
  error: 'a text, or {on: YYYY-MM-DD, what: text}',
})
/** Date-order checks only make sense once every field of the entry parsed. */
const datesValid = (payload: { issues: readonly unknown[] }): boolean => payload.issues.length === 0
const entrySchema = z
  .strictObject({
    version: z.string().regex(VERSION_PATTERN, 'a version <major>.<minor> such as 2.10'),
    released: day.optional(),
    retired: day.optional(),
    deprecated: day.optional(),
    added: z.array(addition).default([]),
  })
  .refine((e) => !e.released || !e.retired || e.released <= e.retired, {
    path: ['retired'],
    message: 'is before the release date',
    when: datesValid,
  })
  .refine((e) => !e.deprecated || !e.retired || e.deprecated <= e.retired, {
    path: ['deprecated'],
    message: 'is after the retirement date',
    when: datesValid,
  })
const calendarSchema = z.strictObject({
  apiV1: z.strictObject({ retired: day, note: z.string().optional() }).optional(),
  versions: z.array(entrySchema).min(1, 'at least one version'),
})

/**
 * Parses and validates a calendar, every scalar as text (YAML's failsafe schema) so an unquoted
 * `2.10` does not become the number 2.1; throws ConfigError naming each bad entry.
 */
export function parseCalendar(text: string, source: string): Calendar {
  let doc: unknown
  try {
    doc = parseYaml(text, { schema: 'failsafe' })
  } catch (err) {
    throw new ConfigError(`${source}: not valid YAML: ${(err as Error).message}`, [])
  }
  const result = calendarSchema.safeParse(doc ?? {}, { reportInput: true })
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${where(doc, issue.path)}: ${describe(issue)}`)
    throw new ConfigError(`${source}: invalid version calendar:\n  - ${problems.join('\n  - ')}`, problems)
  }
  const seen = new Set<string>()
  const problems: string[] = []
  result.data.versions.forEach((e, i) => {
    if (seen.has(e.version)) problems.push(`versions[${i}] (${e.version}): listed twice`)
    seen.add(e.version)
  })
  if (problems.length > 0)
    throw new ConfigError(`${source}: invalid version calendar:\n  - ${problems.join('\n  - ')}`, problems)
  const versions = result.data.versions
    .map((e): CalendarEntry => ({
      version: e.version,
      ...(e.released ? { released: e.released } : {}),
      ...(e.retired ? { retired: e.retired, retiredBy: 'calendar' as const } : {}),
      ...(e.deprecated ? { deprecated: e.deprecated } : {}),
      added: e.added.map((a) => (typeof a === 'string' ? { what: a } : a)),
    }))
    .sort(byVersion)
  return { source, ...(result.data.apiV1 ? { apiV1: result.data.apiV1 } : {}), versions }
}

/** Reads the calendar file; `file` unset → the one shipped with sluice. */
export function loadCalendar(file: string = DEFAULT_CALENDAR_FILE): Calendar {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError(`versions.calendarFile: cannot read ${file}: ${(err as Error).message}`, [])
  }
  return parseCalendar(text, file)
}

/** The calendar with `versions.retirements` from the settings laid over it (adding versions it lacks). */
export function withRetirements(calendar: Calendar, retirements: Readonly<Record<string, string>>): Calendar {
  const entries = new Map(calendar.versions.map((e) => [e.version, e]))
  for (const [version, retired] of Object.entries(retirements)) {
    const entry = entries.get(version) ?? { version, added: [] }
    if (entry.released && entry.released > retired) {
      throw new ConfigError(
        `versions.retirements: ${version} would retire on ${retired}, before its release on ${entry.released}`,
        [],
      )
    }
    entries.set(version, { ...entry, retired, retiredBy: 'settings' })
  }
  return { ...calendar, versions: [...entries.values()].sort(byVersion) }
}

/** What a version is on a given day, by the calendar alone (for the simulated upstream, and tools). */
export type CalendarStatus = 'unknown' | 'unreleased' | 'supported' | 'retired'

export function calendarStatusOn(calendar: Calendar, version: string, date: Date): CalendarStatus {
  const entry = calendar.versions.find((e) => e.version === version)
  if (!entry) return 'unknown'
  const today: Day = dayOfMs(date.getTime())
  if (entry.retired && today >= dayOfIso(entry.retired)) return 'retired'
  if (entry.released && today < dayOfIso(entry.released)) return 'unreleased'
  return 'supported'
}

/**
 * `(version, now) => retired?` by the calendar's dates, looked up in a map built once: the shape of
 * the simulated upstream's `isRetired` option, so `npm run sim` can follow a calendar file.
 */
export function retiredByCalendar(calendar: Calendar): (version: string, now: Date) => boolean {
  const retiredAtMs = new Map(
    calendar.versions
      .filter((e) => e.retired !== undefined)
      .map((e) => [e.version, Date.parse(`${e.retired}T00:00:00Z`)]),
  )
  return (version, now) => {
    const at = retiredAtMs.get(version.trim())
    return at !== undefined && now.getTime() >= at
  }
}

function byVersion(a: CalendarEntry, b: CalendarEntry): number {
  return compareVersions(parseVersion(a.version)!, parseVersion(b.version)!)
}

/** `versions[3] (2.4).retired` — the index and, when readable, the version the entry is about. */
function where(doc: unknown, path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(top level)'
  let text = ''
  for (const [i, key] of path.entries()) {
    if (typeof key === 'number') {
      text += `[${key}]`
      if (i === 1 && path[0] === 'versions') {
        const v = (doc as { versions?: { version?: unknown }[] } | undefined)?.versions?.[key]?.version
        if (typeof v === 'string' && v !== '') text += ` (${v})`
      }
    } else text += (text ? '.' : '') + String(key)
  }
  return text
}

function describe(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys')
    return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`
  if (issue.code === 'invalid_type' && issue.input === undefined) return 'missing'
  if (issue.code === 'invalid_format' && 'input' in issue) return `${issue.message}, got "${String(issue.input)}"`
  return issue.message
}
