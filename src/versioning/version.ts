import { VERSION_PATTERN } from './settings.js'

/** A version number `<major>.<minor>`, kept with its text. */
export interface Version {
  readonly text: string
  readonly major: number
  readonly minor: number
}

/** The longest header value looked at; longer ones are refused before any parsing. */
export const MAX_VERSION_LENGTH = 16

export function parseVersion(text: string): Version | undefined {
  const m = VERSION_PATTERN.exec(text)
  if (!m) return undefined
  return { text, major: Number(m[1]), minor: Number(m[2]) }
}

/** Orders versions numerically: 2.9 < 2.10. */
export const compareVersions = (a: Version, b: Version): number => a.major - b.major || a.minor - b.minor

/** Why a version header was refused. */
export type HeaderProblem = 'empty' | 'several' | 'too_long' | 'format'

export type HeaderReading =
  | { readonly ok: true; readonly version: Version }
  /** `text`: the trimmed value ('' for a repeated header) */
  | { readonly ok: false; readonly problem: HeaderProblem; readonly text: string }

/**
 * Reads a version header as Node hands it over: a string (a repeated header arrives joined with
 * ", "), or an array. Returns the parsed version of the trimmed text, or the problem.
 */
export function readVersionHeader(value: string | readonly string[]): HeaderReading {
  if (typeof value !== 'string') {
    if (value.length === 1) return readVersionHeader(value[0]!)
    return { ok: false, problem: value.length === 0 ? 'empty' : 'several', text: '' }
  }
  const text = value.trim()
  if (text === '') return { ok: false, problem: 'empty', text }
  if (text.includes(',')) return { ok: false, problem: 'several', text }
  if (text.length > MAX_VERSION_LENGTH) return { ok: false, problem: 'too_long', text }
  const version = parseVersion(text)
  return version ? { ok: true, version } : { ok: false, problem: 'format', text }
}
