import type { BadPathCode, MatchResult } from './types.js'

/*
 * Path normalisation: one pass over the raw path that refuses what could smuggle a request past its
 * endpoint's limit, and gives the segments to forward and their keys (docs/requests.md, "Endpoints and limits").
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
  (b >= 0x41 && b <= 0x5a) ||
  (b >= 0x61 && b <= 0x7a) ||
  (b >= 0x30 && b <= 0x39) ||
  b === 0x2d ||
  b === 0x2e ||
  b === 0x5f ||
  b === 0x7e

const isControl = (b: number): boolean => b < 0x20 || b === 0x7f

// RFC 3986 §3.3 and §3.4, by ASCII code: which characters a path segment (pchar without `%`) and a
// query (pchar, `/` and `?`) may hold unencoded. `%` is checked on its own (two hex digits follow).
const IN_SEGMENT = 1
const IN_QUERY = 2
const URL_CHARS = new Uint8Array(128)
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@")
  URL_CHARS[ch.charCodeAt(0)] = IN_SEGMENT | IN_QUERY
for (const ch of '/?') URL_CHARS[ch.charCodeAt(0)] = IN_QUERY
const HASH = 0x23

const byteName = (b: number): string => `0x${b.toString(16).padStart(2, '0').toUpperCase()}`

function bad(code: BadPathCode, message: string): BadPath {
  return { ok: false, code, message }
}

/** Why a character may not stand unencoded in the `part` of a request target: a `#`, a non-ASCII character, another one outside RFC 3986. */
function notAllowed(part: 'path' | 'query' | 'request target', c: number, at: number): BadPath {
  if (c === HASH) {
    return bad(
      'SLUICE_BAD_PATH',
      `The ${part} holds a "#" at offset ${at}: a fragment is never sent to a server (percent-encode a "#" that is data as %23)`,
    )
  }
  if (c >= 0x80) {
    // Node's HTTP parser hands raw bytes over as latin1 characters: up to 0xFF, name the byte.
    const what = c <= 0xff ? `byte (${byteName(c)})` : `character (U+${c.toString(16).toUpperCase().padStart(4, '0')})`
    return bad(
      'SLUICE_BAD_PATH',
      `The ${part} holds a non-ASCII ${what} at offset ${at}; percent-encode its UTF-8 bytes`,
    )
  }
  const escape = `%${c.toString(16).toUpperCase().padStart(2, '0')}`
  const name = c === 0x20 ? 'a space' : c === 0x22 ? `'"'` : `"${String.fromCharCode(c)}"`
  return bad(
    'SLUICE_BAD_PATH',
    `The ${part} holds ${name} at offset ${at}, which a URL cannot hold unencoded; percent-encode it as ${escape}`,
  )
}

/** A short, printable excerpt of the raw path for error messages (no control characters, bounded). */
function excerpt(raw: string): string {
  const short = raw.length > 120 ? `${raw.slice(0, 120)}…` : raw
  return JSON.stringify(short)
}

/** Normalises a raw path (below the API root, no query string). */
// eslint-disable-next-line max-lines-per-function -- one scan over the target, byte by byte (docs/requests.md, "The proxy's own answers")
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
      if (c === BACKSLASH)
        return bad('SLUICE_BAD_PATH_SEPARATOR', `The path holds a "\\" at offset ${i}: ${excerpt(raw)}`)
      if (c >= 0x80 || (c !== PERCENT && (URL_CHARS[c]! & IN_SEGMENT) === 0)) return notAllowed('path', c, i)
      if (c === PERCENT) {
        const h1 = i + 1 < len ? hexValue(raw.charCodeAt(i + 1)) : -1
        const h2 = i + 2 < len ? hexValue(raw.charCodeAt(i + 2)) : -1
        if (h1 < 0 || h2 < 0) {
          return bad(
            'SLUICE_BAD_PATH_ENCODING',
            `Malformed percent-encoding at offset ${i}: ${excerpt(raw.slice(i, i + 3))}`,
          )
        }
        const b = h1 * 16 + h2
        if (b === SLASH || b === BACKSLASH) {
          return bad(
            'SLUICE_BAD_PATH_SEPARATOR',
            `The path holds an encoded "${String.fromCharCode(b)}" (${raw.slice(i, i + 3)}) at offset ${i}`,
          )
        }
        if (isControl(b)) {
          return bad(
            'SLUICE_BAD_PATH_CONTROL_CHAR',
            `The path holds the encoded control character ${byteName(b)} at offset ${i}`,
          )
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

/** Case-folds a segment with escapes of non-ASCII bytes as a case-insensitive router would once decoded: `li%E2%84%AAk` (KELVIN SIGN) is `link`. */
function foldUnicode(head: string): string {
  let bytes = ''
  for (let i = 0; i < head.length; i++) {
    const c = head.charCodeAt(i)
    if (c === PERCENT) {
      bytes += String.fromCharCode(hexValue(head.charCodeAt(i + 1)) * 16 + hexValue(head.charCodeAt(i + 2)))
      i += 2
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

/** Why a query string may not be forwarded (RFC 3986 §3.4), or undefined; its escapes stay as sent, since it is forwarded byte for byte. */
export function queryProblem(query: string): BadPath | undefined {
  const len = query.length
  for (let i = 0; i < len; i++) {
    const c = query.charCodeAt(i)
    if (c < 0x80 && (URL_CHARS[c]! & IN_QUERY) !== 0) continue
    if (c === PERCENT) {
      const h1 = i + 1 < len ? hexValue(query.charCodeAt(i + 1)) : -1
      const h2 = i + 2 < len ? hexValue(query.charCodeAt(i + 2)) : -1
      if (h1 < 0 || h2 < 0) {
        return bad(
          'SLUICE_BAD_PATH_ENCODING',
          `Malformed percent-encoding in the query at offset ${i}: ${excerpt(query.slice(i, i + 3))}`,
        )
      }
      i += 2
      continue
    }
    if (isControl(c))
      return bad('SLUICE_BAD_PATH_CONTROL_CHAR', `The query holds the control character ${byteName(c)} at offset ${i}`)
    return notAllowed('query', c, i)
  }
  return undefined
}

/** The first raw space, control character or non-ASCII byte of a target Node's HTTP parser refused; undefined when none. */
export function rawTargetProblem(target: string): BadPath | undefined {
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i)
    if (isControl(c))
      return bad(
        'SLUICE_BAD_PATH_CONTROL_CHAR',
        `The request target holds the control character ${byteName(c)} at offset ${i}`,
      )
    if (c === 0x20 || c >= 0x80) return notAllowed('request target', c, i)
  }
  return undefined
}
