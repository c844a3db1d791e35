/*
 * The sim's own retirement table (§9 of docs/api/limits-and-versions.md), apart from config/versions.yaml
 * on purpose (docs/development.md, "The simulated API"). A version is retired from 00:00 UTC of its day.
 */
export const PUBLISHED_RETIREMENTS: Readonly<Record<string, string>> = Object.freeze({
  '2.1': '2022-05-14',
  '2.3': '2023-07-08',
  '2.4': '2024-01-20',
  '2.7': '2024-12-14',
  '2.8': '2025-10-18',
  '2.9': '2026-09-12',
})

const retiredAtMs = new Map(
  Object.entries(PUBLISHED_RETIREMENTS).map(([version, day]) => [version, Date.parse(`${day}T00:00:00Z`)]),
)

const VERSION = /^(\d{1,4})\.(\d{1,4})$/

/** Whether the version header names a version retired by `now`; anything not `<major>.<minor>` passes, as the API description says nothing of it. */
export function isRetiredAsPublished(version: string, now: Date): boolean {
  const parsed = VERSION.exec(version.trim())
  if (parsed === null) return false
  const at = retiredAtMs.get(`${Number(parsed[1])}.${Number(parsed[2])}`)
  return at !== undefined && now.getTime() >= at
}
