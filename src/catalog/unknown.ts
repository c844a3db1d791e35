/*
 * Paths not in the catalog are limited by method and a template with id-like segments collapsed to
 * `{id}` (docs/requests.md, "Endpoints and limits").
 */

const PLAIN_WORD = /^[a-z_-]+$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const LONG_HEX = /^[0-9a-f]{16,}$/

/** Whether a segment key (lower-case) looks like data rather than a name. */
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
