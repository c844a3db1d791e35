/*
 * The one name of an endpoint in the access log, the metrics and /status, bounded by the catalog
 * (docs/observability.md, "Labels: bounded, and never a path, an id or a secret").
 */

/** The name of every unknown endpoint whose template has no shape of the catalog's. */
export const UNKNOWN_ENDPOINT = 'unknown'

// The methods the proxy serves (src/proxy/plugin.ts PROXY_METHODS); an id with any other is `unknown`.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
const WORD = /^[a-z_-]+$/
// Names computed for unknown ids, kept for the busy ones; cleared when full, so bounded.
const MEMO_SIZE = 1024

/** A template's shape: static segments lower-case, parameters `{}` (`/Accounts/{accountId}` → `/accounts/{}`). */
const catalogShape = (template: string): string =>
  template
    .split('/')
    .map((part) => (part.startsWith('{') ? '{}' : part.toLowerCase()))
    .join('/')

/**
 * The shape of an unknown endpoint's template, or undefined when it has a segment that is neither
 * `{id}` nor a lower-case word (a template is built that way, so such an id is no unknown template).
 */
function unknownShape(template: string): string | undefined {
  if (!template.startsWith('/')) return undefined
  const parts = template.split('/')
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i]!
    if (part === '{id}') parts[i] = '{}'
    else if (!WORD.test(part)) return undefined
  }
  return parts.join('/')
}

/** Names endpoint ids by the rule above, given the catalog's endpoint ids (`METHOD /template`). */
export function endpointNamer(catalogIds: Iterable<string>): (endpointId: string) => string {
  const known = new Set<string>()
  const shapes = new Set<string>()
  for (const id of catalogIds) {
    known.add(id)
    const space = id.indexOf(' ')
    if (space > 0) shapes.add(catalogShape(id.slice(space + 1)))
  }
  const memo = new Map<string, string>()
  return (endpointId) => {
    if (known.has(endpointId)) return endpointId
    let name = memo.get(endpointId)
    if (name === undefined) {
      const space = endpointId.indexOf(' ')
      const shape =
        space > 0 && METHODS.has(endpointId.slice(0, space)) ? unknownShape(endpointId.slice(space + 1)) : undefined
      name = shape !== undefined && shapes.has(shape) ? endpointId : UNKNOWN_ENDPOINT
      if (memo.size >= MEMO_SIZE) memo.clear()
      memo.set(endpointId, name)
    }
    return name
  }
}
