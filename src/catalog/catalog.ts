import { BoundedMap } from '../bounded/index.js'
import { CatalogInvalidError, CatalogOptionsError, UnknownOverrideError } from './errors.js'
import { readCatalogFile } from './file.js'
import { normalisePath, type NormalisedPath } from './path.js'
import type {
  Catalog,
  CatalogEntry,
  CatalogOptions,
  Endpoint,
  EndpointRate,
  LimitSource,
  MatchResult,
} from './types.js'
import { nearestEndpointId } from './nearest.js'
import { unknownTemplate } from './unknown.js'
import { endpointNamer } from './names.js'

/*
 * The compiled catalog: one segment trie per method, static children before the parameter, with
 * backtracking (docs/requests.md, "Endpoints and limits", has why it stays O(path segments)).
 */

/** Where a matched route lands: its endpoint and, per segment, the static name or null (a parameter). */
interface Terminal {
  readonly endpoint: Endpoint
  readonly parts: readonly (string | null)[]
}

interface TrieNode {
  statics: Map<string, TrieNode> | undefined
  /** the catalog's spelling of this node's static segment */
  literal: string
  param: TrieNode | undefined
  terminal: Terminal | undefined
}

const newNode = (literal: string): TrieNode => ({ statics: undefined, literal, param: undefined, terminal: undefined })

/**
 * Unknown paths keep their Endpoint objects in a small cache, so a busy unknown path allocates none.
 * 1,024 templates: unknown paths are the catalog's gaps, a few in use at once; past it, one is made again.
 */
const UNKNOWN_CACHE_SIZE = 1024

const ENDPOINT_ID = /^([A-Z]+) (\/\S*)$/

function find(node: TrieNode, keys: readonly string[], depth: number): Terminal | undefined {
  if (depth === keys.length) return node.terminal
  const next = node.statics?.get(keys[depth]!)
  if (next !== undefined) {
    const found = find(next, keys, depth + 1)
    if (found !== undefined) return found
  }
  return node.param === undefined ? undefined : find(node.param, keys, depth + 1)
}

function templateParts(template: string): (string | null)[] {
  if (template === '/') return []
  return template
    .slice(1)
    .split('/')
    .map((part) => (part.startsWith('{') ? null : part))
}

function checkLimit(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new CatalogOptionsError(`${what} must be a whole number ≥ 1, got ${JSON.stringify(value)}`)
  }
  return value
}

/**
 * The path to forward for a catalog hit: static segments in the catalog's spelling (any `;params`
 * kept), parameter segments as normalised. The raw path itself when nothing changed.
 */
function canonicalPath(parts: readonly (string | null)[], norm: NormalisedPath, rawPath: string): string {
  const { segments } = norm
  let changed = norm.changed
  if (!changed) {
    for (let i = 0; i < parts.length; i++) {
      const literal = parts[i]
      if (literal != null && segments[i] !== literal && !segments[i]!.startsWith(`${literal};`)) {
        changed = true
        break
      }
    }
    if (!changed) return rawPath
  }
  let path = ''
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!
    const literal = parts[i]
    if (literal == null) {
      path += `/${segment}`
    } else {
      const semi = segment.indexOf(';')
      path += semi < 0 ? `/${literal}` : `/${literal}${segment.slice(semi)}`
    }
  }
  return path === '' ? '/' : path
}

/** Compiles catalog entries into a matcher; throws CatalogInvalidError / UnknownOverrideError / CatalogOptionsError. */
// eslint-disable-next-line max-lines-per-function -- one pass compiling the catalog, its checks in the order docs/upstreams.md gives
export function compileCatalog(entries: readonly CatalogEntry[], options: CatalogOptions): Catalog {
  const defaultLimit = checkLimit(options.defaultLimit, 'limits.default')
  const overrides = new Map<string, number>()
  for (const [key, value] of Object.entries(options.overrides))
    overrides.set(key, checkLimit(value, `limits.overrides "${key}"`))

  // rates: one frozen object each, so the limiter computes its constants once (src/limiter/rate/limiter.ts)
  const rates = new Map(Object.entries(options.rates ?? {}).map(([id, rate]) => [id, Object.freeze({ ...rate })]))
  const defaultRate = rates.get('*')
  const tries = new Map<string, TrieNode>()
  const endpoints: Endpoint[] = []
  const byId = new Map<string, Endpoint>()

  for (const entry of entries) {
    const id = `${entry.method} ${entry.path}`
    if (byId.has(id)) throw new CatalogInvalidError(`the endpoint catalog lists ${id} twice`)
    const override = overrides.get(id)
    const limitSource: LimitSource =
      override !== undefined
        ? 'override'
        : options.configured === true
          ? 'configured'
          : entry.limit === null
            ? 'unlisted'
            : 'published'
    const rate = entry.rate ?? rates.get(id) ?? defaultRate
    const endpoint: Endpoint = Object.freeze({
      id,
      method: entry.method,
      template: entry.path,
      // an endpoint with a rate and no published limit may have N in progress: the fair queue still orders its waiters
      // (docs/redis-limiter.md, "Rates")
      limit: override ?? entry.limit ?? (entry.rate === undefined ? defaultLimit : entry.rate.requests),
      limitSource,
      ...(entry.since === undefined ? {} : { since: entry.since }),
      ...rateOf(rate),
    })
    const parts = templateParts(entry.path)
    let node = tries.get(entry.method)
    if (node === undefined) tries.set(entry.method, (node = newNode('')))
    for (const part of parts) {
      if (part === null) {
        node = node.param ??= newNode('')
        continue
      }
      const key = part.toLowerCase()
      node.statics ??= new Map()
      let child = node.statics.get(key)
      if (child === undefined) node.statics.set(key, (child = newNode(part)))
      else if (child.literal !== part) {
        throw new CatalogInvalidError(
          `the endpoint catalog spells one segment both "${child.literal}" and "${part}" (${id}); matching ignores case`,
        )
      }
      node = child
    }
    if (node.terminal !== undefined) {
      throw new CatalogInvalidError(
        `the endpoint catalog lists ${node.terminal.endpoint.id} and ${id}, which match the same paths`,
      )
    }
    node.terminal = { endpoint, parts }
    endpoints.push(endpoint)
    byId.set(id, endpoint)
  }

  // A rate for an id the catalog lacks would never apply: refused like a misspelt override (paths not in the catalog
  // take `*`).
  for (const id of rates.keys()) {
    if (id !== '*' && !byId.has(id)) {
      const near = nearestEndpointId(id, byId.keys())
      throw new CatalogOptionsError(
        `limits.rates: "${id}" is not an endpoint id of the catalog${near === undefined ? '; paths not in the catalog take the rate of "*"' : `; did you mean "${near}"?`}`,
      )
    }
  }

  // HEAD shares GET's endpoints unless the catalog lists HEAD itself.
  const methodFor = (method: string): string => (method === 'HEAD' && !tries.has('HEAD') ? 'GET' : method)

  // Overrides for paths not in the catalog: only plausible unknown-path ids, so a typo cannot hide.
  const unknownOverrides = new Map<string, number>()
  for (const [key, value] of overrides) {
    if (byId.has(key)) continue
    const parsed = ENDPOINT_ID.exec(key)
    if (parsed === null)
      throw new UnknownOverrideError(key, '; expected "METHOD /path", e.g. "GET /accounts/{id}/memberships"')
    const method = parsed[1]!
    // A template's braces are no URL characters: escaped, `{name}` is an id-like segment, as `{id}` of a template is.
    const norm = normalisePath(parsed[2]!.replace(/\{/g, '%7B').replace(/\}/g, '%7D'))
    if (!norm.ok) throw new UnknownOverrideError(key, `; ${norm.message}`)
    const counted = methodFor(method)
    const root = tries.get(counted)
    const hit = root === undefined ? undefined : find(root, norm.keys, 0)
    if (hit !== undefined) throw new UnknownOverrideError(key, `; did you mean "${hit.endpoint.id}"?`)
    const expected = `${counted} ${unknownTemplate(norm.keys)}`
    if (expected !== key) throw new UnknownOverrideError(key, `; requests for that path are counted as "${expected}"`)
    // A path the catalog lacks that is one typo away from one it has is that one, misspelt.
    const near = nearestEndpointId(key, byId.keys())
    if (near !== undefined) throw new UnknownOverrideError(key, `; did you mean "${near}"?`)
    unknownOverrides.set(key, value)
  }

  const unknownCache = new BoundedMap<string, Endpoint>(UNKNOWN_CACHE_SIZE)
  function unknownEndpoint(method: string, keys: readonly string[]): Endpoint {
    const template = unknownTemplate(keys)
    const id = `${method} ${template}`
    return unknownCache.getOrMake(id, () => {
      const override = unknownOverrides.get(id)
      return Object.freeze({
        id,
        method,
        template,
        limit: override ?? defaultLimit,
        limitSource:
          override !== undefined
            ? ('override' as const)
            : options.configured === true
              ? ('configured' as const)
              : ('unknown' as const),
        ...rateOf(rates.get(id) ?? defaultRate),
      })
    })
  }

  function match(method: string, rawPath: string): MatchResult {
    const norm = normalisePath(rawPath)
    if (!norm.ok) return norm
    const counted = methodFor(method)
    const root = tries.get(counted)
    const hit = root === undefined ? undefined : find(root, norm.keys, 0)
    if (hit !== undefined) return { ok: true, endpoint: hit.endpoint, path: canonicalPath(hit.parts, norm, rawPath) }
    const path = norm.changed ? `/${norm.segments.join('/')}` : rawPath
    return { ok: true, endpoint: unknownEndpoint(counted, norm.keys), path }
  }

  return { endpoints: Object.freeze(endpoints), match, nameOf: endpointNamer(byId.keys()) }
}

const rateOf = (rate: EndpointRate | undefined): { rate?: EndpointRate } =>
  rate === undefined ? {} : { rate: Object.isFrozen(rate) ? rate : Object.freeze({ ...rate }) }

/** Reads `config/endpoints.yaml` (or `file`), validates it and compiles the matcher. */
export function loadCatalog(file: string, options: CatalogOptions): Catalog {
  return compileCatalog(readCatalogFile(file), options)
}
