/*
 * Paths not in the catalog are limited by method + a template in which id-like segments are collapsed
 * to `{id}`, so `GET /foo/123` and `GET /foo/456` share a queue while `GET /foo/123` and `GET /bar/1`
 * do not. What counts as id-like (compared on the segment's key: before `;`, case-folded, unreserved
 * escapes decoded):
 *
 * - anything that is not a plain word of ASCII letters, `-` and `_` — so every segment with a digit
 *   (`123`, `a1b2`, `v2`), a dot, `~`, `@`, a remaining escape or a non-ASCII character;
 * - a UUID (8-4-4-4-12 hex digits, any case), even one without digits;
 * - 16 or more hex letters (`deadbeefcafebabe`).
 *
 * Every static segment of the API (§4) is a plain camelCase word, so words stay and data collapses.
 * Words keep their folded (lower-case) form, so letter case cannot split one unknown endpoint in two.
 */

const PLAIN_WORD = /^[a-z_-]+$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const LONG_HEX = /^[0-9a-f]{16,}$/

/** Whether a segment key (lower-case) looks like data rather than a name; see the module comment. */
export function isIdLike(key: string): boolean {
  return !PLAIN_WORD.test(key) || UUID.test(key) || LONG_HEX.test(key)
}

/** The template of an unknown path from its segment keys: `/foo/{id}/bar`. */
export function unknownTemplate(keys: readonly string[]): string {
  if (keys.length === 0) return '/'
  let template = ''
  for (const key of keys) template += isIdLike(key) ? '/{id}' : `/${key}`
  return template
}
