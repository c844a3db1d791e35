/*
 * The sim's own retirement table, from §9 of docs/api/limits-and-versions.md (the rows retired with 410).
 * It is deliberately separate from config/versions.yaml: the sim stands in for the API, so the proxy's
 * calendar is tested against an independent reading of the API description. Versions it gives no
 * retirement date (2.5, 2.6, 2.10, 2.11, 2.12, and the unpublished 2.2) are alive.
 *
 * A version is retired from 00:00 UTC of its date on (the API gives days, not instants).
 * Replace the whole rule with the `isRetired(version, now)` option.
 */
export const PUBLISHED_RETIREMENTS: Readonly<Record<string, string>> = Object.freeze({
  '2.1': '2022-05-14',
  '2.3': '2023-07-08',
  '2.4': '2024-01-20',
  '2.7': '2024-12-14',
  '2.8': '2025-10-18',
  '2.9': '2026-09-12',
})

const retiredAtMs = new Map(Object.entries(PUBLISHED_RETIREMENTS).map(([version, day]) => [version, Date.parse(`${day}T00:00:00Z`)]))

const VERSION = /^(\d{1,4})\.(\d{1,4})$/

/**
 * Whether the version header value names a version retired on or before `now` (docs/api/limits-and-versions.md §9).
 * `2.09` is read as 2.9; anything not `<major>.<minor>` is not a retired version (the API does not
 * say what the API does with it, so the sim lets it through).
 */
export function isRetiredAsPublished(version: string, now: Date): boolean {
  const parsed = VERSION.exec(version.trim())
  if (parsed === null) return false
  const at = retiredAtMs.get(`${Number(parsed[1])}.${Number(parsed[2])}`)
  return at !== undefined && now.getTime() >= at
}
