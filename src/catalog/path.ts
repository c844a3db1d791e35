import type { BadPathCode, MatchResult } from './types.js'

/*
 * Path normalisation: one pass over the raw (still percent-encoded) path that refuses what could
 * smuggle a request past its endpoint's limit or into another path, and produces the segments to
 * forward plus the keys static segments are compared by.
 *
 * - empty segments (doubled slashes, a trailing slash) are dropped;
 * - escapes of unreserved characters (RFC 3986: A-Z a-z 0-9 - . _ ~) are decoded, other escapes are
 *   kept with upper-case hex (`%c3%a9` → `%C3%A9`), so each path has one spelling;
 * - a segment's key is the part before its first raw `;` (Java servers drop `;params` when routing),
 *   case-folded, so `/Accounts/SEARCH;x` is compared as `accounts`, `search`.
 */

export type BadPath = Extract<MatchResult, { ok: false }>

export interface NormalisedPath {
  readonly ok: true
  /** the segments to forward: unreserved escapes decoded, other escapes upper-case, empty ones dropped */
  readonly segments: string[]
  /** per segment, what static segments are compared by: the part before `;`, case-folded */
  readonly keys: string[]
  /** false when `/` + segments.join('/') is exactly the raw path (it can then be forwarded as is) */
  readonly changed: boolean
}

const SLASH = 0x2f
const BACKSLASH = 0x5c
const PERCENT = 0x25
const SEMICOLON = 0x3b

// hex digit value by char code, -1 for anything else
const HEX = new Int8Array(128).fill(-1)
for (let c = 0; c < 10; c++) HEX[0x30 + c] = c
for (let c = 0; c < 6; c++) {
  HEX[0x41 + c] = 10 + c
  HEX[0x61 + c] = 10 + c
}
const hexValue = (code: number): number => (code < 128 ? HEX[code]! : -1)

const isUnreserved = (b: number): boolean =>
  (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2e || b === 0x5f || b === 0x7e

const isControl = (b: number): boolean => b < 0x20 || b === 0x7f

const byteName = (b: number): string => `0x${b.toString(16).padStart(2, '0').toUpperCase()}`

function bad(code: BadPathCode, message: string): BadPath {
  return { ok: false, code, message }
}

/** A short, printable excerpt of the raw path for error messages (no control characters, bounded). */
function excerpt(raw: string): string {
  const short = raw.length > 120 ? `${raw.slice(0, 120)}…` : raw
  return JSON.stringify(short)
}

/** Normalises a raw path (below the API root, no query string); see the module comment. */
export function normalisePath(raw: string): NormalisedPath | BadPath {
  const len = raw.length
  if (len === 0) return { ok: true, segments: [], keys: [], changed: true }
  if (raw.charCodeAt(0) !== SLASH) return bad('SLUICE_BAD_PATH', `The path must start with "/": ${excerpt(raw)}`)

  const segments: string[] = []
  const keys: string[] = []
  let changed = false
  let i = 1
  while (i <= len) {
    const start = i
    let built = '' // the segment so far, only when an escape changed it
    let runStart = i // start of the verbatim run not yet copied into `built`
    let rewritten = false
    let ascii = true
    let semi = -1 // offset of the first raw `;` in the normalised segment
    while (i < len) {
      const c = raw.charCodeAt(i)
      if (c === SLASH) break
      if (isControl(c)) {
        return bad('SLUICE_BAD_PATH_CONTROL_CHAR', `The path holds the control character ${byteName(c)} at offset ${i}`)
      }
      if (c === BACKSLASH) return bad('SLUICE_BAD_PATH_SEPARATOR', `The path holds a "\\" at offset ${i}: ${excerpt(raw)}`)
      if (c === PERCENT) {
        const h1 = i + 1 < len ? hexValue(raw.charCodeAt(i + 1)) : -1
        const h2 = i + 2 < len ? hexValue(raw.charCodeAt(i + 2)) : -1
        if (h1 < 0 || h2 < 0) {
          return bad('SLUICE_BAD_PATH_ENCODING', `Malformed percent-encoding at offset ${i}: ${excerpt(raw.slice(i, i + 3))}`)
        }
        const b = h1 * 16 + h2
        if (b === SLASH || b === BACKSLASH) {
          return bad('SLUICE_BAD_PATH_SEPARATOR', `The path holds an encoded "${String.fromCharCode(b)}" (${raw.slice(i, i + 3)}) at offset ${i}`)
        }
        if (isControl(b)) {
          return bad('SLUICE_BAD_PATH_CONTROL_CHAR', `The path holds the encoded control character ${byteName(b)} at offset ${i}`)
        }
        if (isUnreserved(b)) {
          built += raw.slice(runStart, i) + String.fromCharCode(b)
          runStart = i + 3
          rewritten = true
        } else {
          if (b >= 0x80) ascii = false
          const escape = raw.slice(i, i + 3)
          const upper = escape.toUpperCase()
          if (upper !== escape) {
            built += raw.slice(runStart, i) + upper
            runStart = i + 3
            rewritten = true
          }
        }
        i += 3
        continue
      }
      if (c === SEMICOLON && semi < 0) semi = rewritten ? built.length + (i - runStart) : i - start
      if (c >= 0x80) ascii = false
      i++
    }
    const segment = rewritten ? built + raw.slice(runStart, i) : raw.slice(start, i)
    i++ // past the `/` (or the end)
    if (segment.length === 0) {
      changed = true // a doubled or trailing slash
      continue
    }
    if (rewritten) changed = true
    const head = semi < 0 ? segment : segment.slice(0, semi)
    if (head.length === 0) {
      return bad('SLUICE_BAD_PATH_SEGMENT', `The path holds a segment with only a ";" parameter: ${excerpt(segment)}`)
    }
    if (head === '.' || head === '..') {
      return bad('SLUICE_BAD_PATH_TRAVERSAL', `"." and ".." segments are not allowed: ${excerpt(raw)}`)
    }
    segments.push(segment)
    keys.push(ascii ? head.toLowerCase() : foldUnicode(head))
  }
  return { ok: true, segments, keys, changed }
}

/**
 * Case-folds a segment with non-ASCII characters or escapes, the way a case-insensitive router would
 * see it once decoded as UTF-8: `li%E2%84%AAk` (KELVIN SIGN) folds to `link`, `ſ` to `s`. Raw bytes
 * reach us as latin1 characters (Node's HTTP parser), escapes as `%XX`: both are bytes of UTF-8.
 */
function foldUnicode(head: string): string {
  let bytes = ''
  for (let i = 0; i < head.length; i++) {
    const c = head.charCodeAt(i)
    if (c === PERCENT) {
      bytes += String.fromCharCode(hexValue(head.charCodeAt(i + 1)) * 16 + hexValue(head.charCodeAt(i + 2)))
      i += 2
    } else if (c > 0xff) {
      return head.toLowerCase() // not from Node's parser: already text
    } else {
      bytes += head[i]
    }
  }
  let folded = ''
  for (const ch of Buffer.from(bytes, 'latin1').toString('utf8')) {
    const lower = ch.toLowerCase()
    folded += lower.length === 1 && lower.charCodeAt(0) < 0x80 ? lower : ch.toUpperCase().toLowerCase()
  }
  return folded
}
