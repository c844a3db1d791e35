import { z } from 'zod'
import { catalogEntrySchema, rateSchema } from '../catalog/file.js'
import { UPSTREAM_NAME } from './scope.js'

/**
 * Settings of the upstreams besides the CRM's own (docs/upstreams.md): each a route prefix, a target
 * URL, a catalog, how the instance is found and which answers mean "over the limit, try again".
 */

// Each message says what to write (docs/configuration.md, "When a setting is wrong"); `required` when it is missing.
const needed =
  (what: string) =>
  (issue: { input?: unknown }): string =>
    issue.input === undefined ? `required: ${what}` : what
const HEADER_NAME = 'a valid HTTP header name, such as x-account-id'
const SEGMENT = 'the path segment below the prefix that names the instance, 1 to 16'
const DEFAULT_LIMIT = 'the limit of every path not listed, a whole number ≥ 1 (e.g. default: 4)'

/** How the instance (whose limits a request counts against) is read (docs/upstreams.md, "Instance"). */
export const instanceRuleSchema = z.discriminatedUnion(
  'from',
  [
    /** the HTTP Basic username, as the CRM does (its `instanceHeader` when there is no Authorization) */
    z.strictObject({ from: z.literal('basic') }),
    /** a request header's value */
    z.strictObject({
      from: z.literal('header'),
      header: z
        .string({ error: needed(HEADER_NAME) })
        .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, HEADER_NAME)
        .transform((s) => s.toLowerCase()),
    }),
    /** the nth path segment below the prefix (1 = the first), e.g. the mailbox of `/users/{id}/messages` */
    z.strictObject({
      from: z.literal('path'),
      segment: z
        .number({ error: needed(SEGMENT) })
        .int(SEGMENT)
        .min(1, SEGMENT)
        .max(16, SEGMENT),
    }),
    /** a digest of the Authorization header's canonical form: one instance per token, the token never kept */
    z.strictObject({
      from: z.literal('credential'),
      /** schemes the API takes as another, e.g. GitHub's `token` as `bearer` (lower-case names; docs/upstreams.md, "Instance") */
      schemeAliases: z
        .record(
          z.string().regex(/^[a-z0-9!#$%&'*+.^_`|~-]+$/, 'a lower-case auth scheme'),
          z.string().regex(/^[a-z0-9!#$%&'*+.^_`|~-]+$/, 'a lower-case auth scheme'),
        )
        .optional(),
    }),
    /** one key for the whole upstream (an account-wide limit) */
    z.strictObject({ from: z.literal('upstream') }),
  ],
  { error: 'from: one of basic, header (with header:), path (with segment:), credential, upstream' },
)
export type InstanceRule = z.output<typeof instanceRuleSchema>

/** An inline catalog: the endpoints with published limits, and the limit of every other path. */
export const upstreamCatalogSchema = z.strictObject({
  endpoints: z.array(catalogEntrySchema).default([]),
  /** limit of unlisted endpoints and of paths not in the list */
  default: z
    .number({ error: needed(DEFAULT_LIMIT) })
    .int(DEFAULT_LIMIT)
    .positive(DEFAULT_LIMIT),
  /**
   * `endpoint`: each path not listed is its own key (method + template), as for the CRM;
   * `upstream`: every path not listed shares one key (a limit across the whole API, as GitHub's)
   */
  per: z
    .enum(['endpoint', 'upstream'], {
      error: 'endpoint (each path not listed its own key) or upstream (every path not listed one key)',
    })
    .default('endpoint'),
  /**
   * a rate for every endpoint without its own (docs/upstreams.md, "Describing an upstream"; docs/redis-limiter.md,
   * "Rates"): with `per: upstream`, the
   * one key of the whole API, e.g. HubSpot's 100 requests per 10 s per app
   */
  rate: rateSchema.optional(),
})
export type UpstreamCatalog = z.output<typeof upstreamCatalogSchema>

/** How sluice's key for an instance of this upstream goes with its requests; absent: as `credentials.inject` says, in Basic auth. */
export const upstreamCredentialsSchema = z.strictObject({
  /** false: sluice holds no key here; the app's own credentials pass untouched (default: `credentials.inject`) */
  inject: z.boolean({ error: 'true or false' }).optional(),
  /** the header that carries the key */
  header: z
    .string()
    .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, HEADER_NAME)
    .transform((s) => s.toLowerCase())
    .default('authorization'),
  /** `basic`: Basic base64(<instance>:<key>); `bearer`: Bearer <key>; `none`: the key as it is (an x-api-key header) */
  scheme: z.enum(['basic', 'bearer', 'none'], { error: 'basic, bearer, or none (the key as it is)' }).default('basic'),
})

const NAME = 'lower-case letters, digits and -, starting with a letter (32 at most), e.g. reports'
const PREFIX = 'the path apps call, such as /reports/v1'
const STATUS = 'an HTTP status 400-599, e.g. 503'
export const upstreamSchema = z.strictObject({
  name: z.string({ error: needed(NAME) }).regex(UPSTREAM_NAME, NAME),
  /** the path prefix clients call, e.g. `/trial/v2` */
  prefix: z.string({ error: needed(PREFIX) }).regex(/^(\/[A-Za-z0-9._~-]+)+$/, PREFIX),
  url: z
    .url({ protocol: /^https?$/, error: needed('an http or https URL, e.g. https://reports.example.com/v1') })
    // Apps send their own Authorization; credentials in this URL would be dropped, and logged with it.
    .refine(
      (u) => !/^[a-z]+:\/\/[^/?#]*@/i.test(u),
      'must not hold credentials (user:password@): apps send their own Authorization',
    ),
  /** a built-in description (profiles.ts) the fields below complete or replace */
  profile: z.string().optional(),
  /** inline, or the path of a YAML file of the same shape */
  catalog: z
    .union([z.string().min(1), upstreamCatalogSchema], {
      error: 'the path of a catalog file, or a catalog such as { default: 4 }',
    })
    .optional(),
  instance: instanceRuleSchema.optional(),
  /** statuses besides 429 that send the request back into its queue when they carry Retry-After */
  retryWithRetryAfter: z.array(z.number({ error: STATUS }).int(STATUS).min(400, STATUS).max(599, STATUS)).optional(),
  /** whether sluice injects this upstream's keys, in which header and scheme (docs/upstreams.md, "Credentials") */
  credentials: upstreamCredentialsSchema.optional(),
})
export type UpstreamEntry = z.output<typeof upstreamSchema>

export const upstreamsSettingsSchema = z.array(upstreamSchema).default([])

/**
 * The keys an object under `upstreams` may hold, by its path (`upstreams.1.catalog`), for an error
 * about an unknown one to say what is allowed there; undefined elsewhere.
 */
export function upstreamKeysAt(path: readonly string[]): readonly string[] | undefined {
  if (path[0] !== 'upstreams') return undefined
  const named = path.slice(2).filter((p) => !/^\d+$/.test(p))
  const schema =
    named.length === 0
      ? upstreamSchema
      : (
          {
            catalog: upstreamCatalogSchema,
            endpoints: catalogEntrySchema,
            rate: rateSchema,
            credentials: upstreamCredentialsSchema,
          } as Record<string, { shape?: Record<string, unknown> }>
        )[named[named.length - 1]!]
  return schema?.shape === undefined ? undefined : Object.keys(schema.shape)
}
