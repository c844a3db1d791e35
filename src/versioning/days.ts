/**
 * Calendar days as whole numbers (days since 1970-01-01, UTC), so that "is 2.9 retired today" is one
 * integer comparison. The API announces dates, not instants; sluice reads them as UTC days.
 */
export type Day = number

export const DAY_MS = 86_400_000

/** `2026-09-12` → its day number. The text must already be a valid date (the schemas check that). */
export const dayOfIso = (iso: string): Day => Math.floor(Date.parse(`${iso}T00:00:00Z`) / DAY_MS)

export const isoOfDay = (day: Day): string => new Date(day * DAY_MS).toISOString().slice(0, 10)

export const dayOfMs = (ms: number): Day => Math.floor(ms / DAY_MS)

/** RFC 9745 `Deprecation`: a structured-field date, `@` and the Unix time in seconds. */
export const structuredDate = (day: Day): string => `@${day * 86_400}`

/** RFC 8594 `Sunset`: an HTTP-date (IMF-fixdate), `Sat, 12 Sep 2026 00:00:00 GMT`. */
export const httpDate = (day: Day): string => new Date(day * DAY_MS).toUTCString()
