import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { compileCatalog, DEFAULT_CATALOG_FILE, loadCatalog } from '../catalog/index.js'
import type { Catalog, CatalogOptions, Endpoint } from '../catalog/types.js'
import { ConfigError } from '../errors/config-error.js'
import type { Injection } from './credentials.js'
import { PROFILES } from './profiles.js'
import { DEFAULT_UPSTREAM } from './scope.js'
import { throttleRule, type ThrottleRule } from './throttle.js'
import { upstreamCatalogSchema, type InstanceRule, type UpstreamCatalog, type UpstreamEntry } from './settings.js'

export { DEFAULT_UPSTREAM, scopedInstance, splitScoped } from './scope.js'
export { PROFILE_NAMES } from './profiles.js'
export { upstreamsSettingsSchema, type InstanceRule, type UpstreamEntry } from './settings.js'

/** One upstream, resolved from its settings and profile: what the proxy routes by and forwards to. */
export interface UpstreamPlan {
  readonly name: string
  /** the path prefix clients call */
  readonly prefix: string
  /** the target root */
  readonly url: string
  readonly catalog: Catalog
  /** the limit of a path its catalog does not list */
  readonly defaultLimit: number
  readonly instance: InstanceRule
  /** whether an answer is this upstream's over-the-limit (docs/upstreams.md, "Over the limit") */
  readonly throttled: ThrottleRule
  /** whether the CRM's version policy applies */
  readonly versions: boolean
  /** whether sluice injects its key, in which header and scheme (docs/upstreams.md, "Credentials") */
  readonly credentials: Injection
}

/** What resolving reads of the settings. */
export interface UpstreamsInput {
  readonly upstream: string
  readonly basePath: string
  readonly limits: {
    readonly default: number
    readonly overrides: CatalogOptions['overrides']
    readonly rates?: CatalogOptions['rates']
  }
  readonly upstreams: readonly UpstreamEntry[]
  /** `credentials.inject`: every upstream's default */
  readonly credentials?: { readonly inject: boolean }
}

/** The id of the one key every path of a `per: upstream` catalog shares (not listed otherwise). */
export const WHOLE_UPSTREAM_ENDPOINT = 'ALL /*'

/**
 * Every upstream, the CRM's own first: built from the `neon-v2` profile like any other
 * (docs/upstreams.md, "Profiles"). Reads catalog files now, so a catalog that does not parse stops
 * the start with a ConfigError naming `upstreams.<i>.catalog` and `where` it came from.
 */
export function resolveUpstreams(
  input: UpstreamsInput,
  where: (key: string) => string | undefined = () => undefined,
): [UpstreamPlan, ...UpstreamPlan[]] {
  const crm = loadCatalog(DEFAULT_CATALOG_FILE, {
    defaultLimit: input.limits.default,
    overrides: input.limits.overrides,
    ...(input.limits.rates === undefined ? {} : { rates: input.limits.rates }),
  })
  const own: UpstreamEntry = { name: DEFAULT_UPSTREAM, prefix: input.basePath, url: input.upstream, profile: 'neon-v2' }
  const planOf = (entry: UpstreamEntry, key: string): UpstreamPlan => resolveOne(entry, key, input, crm, where)
  return [planOf(own, 'upstream'), ...input.upstreams.map((entry, i) => planOf(entry, `upstreams.${i}.catalog`))]
}

/** One upstream from its entry and its profile; `crm`: the CRM's catalog, for a profile that takes it. */
function resolveOne(
  entry: UpstreamEntry,
  key: string,
  input: UpstreamsInput,
  crm: Catalog,
  where: (key: string) => string | undefined,
): UpstreamPlan {
  // the schema has checked the profile's name (src/config/schema.ts)
  const profile = entry.profile === undefined ? undefined : PROFILES[entry.profile]
  const source = entry.catalog ?? (profile === undefined || 'crm' in profile.catalog ? undefined : profile.catalog.file)
  // no catalog of its own and none from the profile: the CRM's (the schema refuses an upstream with neither)
  const own =
    source === undefined ? undefined : typeof source === 'string' ? readUpstreamCatalog(source, key, where) : source
  const catalog =
    own === undefined
      ? crm
      : catalogOf(
          own,
          key,
          where,
          // an own catalog's limits are the operator's; a profile's file holds what its API publishes
          entry.catalog !== undefined,
        )
  const inject = input.credentials?.inject ?? false
  return {
    name: entry.name,
    prefix: entry.prefix,
    url: entry.url,
    catalog,
    defaultLimit: own?.default ?? input.limits.default,
    instance: entry.instance ?? profile?.instance ?? { from: 'upstream' },
    throttled: throttleRule(entry.retryWithRetryAfter ?? profile?.retryWithRetryAfter ?? []),
    versions: profile?.versions === true && entry.catalog === undefined,
    credentials: {
      inject: entry.credentials?.inject ?? inject,
      header: entry.credentials?.header ?? 'authorization',
      scheme: entry.credentials?.scheme ?? 'basic',
    },
  }
}

/** A catalog file of the upstream catalog's shape; a ConfigError naming the key when it cannot be used. */
function readUpstreamCatalog(file: string, key: string, where: (key: string) => string | undefined): UpstreamCatalog {
  const fail = (why: string): never => {
    const from = where(key)
    throw new ConfigError(`invalid setting: ${key}${from ? ` (${from})` : ''}: the catalog ${file} ${why}`, [key])
  }
  const first = (err: unknown): string => (err as Error).message.split('\n', 1)[0]!
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    return fail(`cannot be read: ${first(err)}`)
  }
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (err) {
    return fail(`is not valid YAML: ${first(err)}`)
  }
  const parsed = upstreamCatalogSchema.safeParse(doc)
  if (!parsed.success)
    return fail(
      `is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    )
  return parsed.data
}

/** Compiles an upstream's catalog; `per: upstream` sends every path not listed to one shared key. */
function catalogOf(
  source: UpstreamCatalog,
  key: string,
  where: (key: string) => string | undefined,
  configured: boolean,
): Catalog {
  let compiled: Catalog
  try {
    compiled = compileCatalog(source.endpoints, {
      defaultLimit: source.default,
      overrides: {},
      configured,
      ...(source.rate === undefined ? {} : { rates: { '*': source.rate } }),
    })
  } catch (err) {
    const from = where(key)
    throw new ConfigError(`invalid setting: ${key}${from ? ` (${from})` : ''}: ${(err as Error).message}`, [key])
  }
  if (source.per === 'endpoint') return compiled
  const whole: Endpoint = Object.freeze({
    id: WHOLE_UPSTREAM_ENDPOINT,
    method: 'ALL',
    template: '/*',
    limit: source.default,
    limitSource: configured ? 'configured' : 'published',
    ...(source.rate === undefined ? {} : { rate: Object.freeze({ ...source.rate }) }),
  })
  const known = new Set(compiled.endpoints.map((e) => e.id))
  return {
    endpoints: Object.freeze([...compiled.endpoints, whole]),
    match(method, rawPath) {
      const result = compiled.match(method, rawPath)
      return result.ok && !known.has(result.endpoint.id) ? { ...result, endpoint: whole } : result
    },
    nameOf: (id) => (id === WHOLE_UPSTREAM_ENDPOINT || known.has(id) ? id : compiled.nameOf(id)),
  }
}
