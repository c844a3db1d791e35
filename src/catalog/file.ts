import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import { CatalogInvalidError } from './errors.js'
import type { CatalogEntry } from './types.js'

/** A static segment is a name; a parameter is `{name}` (the API's spelling, kept for the template). */
const TEMPLATE = /^\/$|^(?:\/(?:[A-Za-z0-9_-]+|\{[A-Za-z][A-Za-z0-9_]*\}))+$/

/**
 * A rate, N requests per window (docs/redis-limiter.md, "Rates"), as an endpoint of the catalog or
 * `limits.rates` writes it: `{ requests: 100, windowMs: 10000 }`, optionally `burst` (default 1).
 */
// Each message says what to write (docs/configuration.md, "When a setting is wrong").
const REQUESTS = 'a whole number of requests ≥ 1, e.g. 100'
const WINDOW = 'the window in ms, a whole number from 1 to 86400000, e.g. 10000'
const BURST = 'how many may start together, a whole number ≥ 1 and at most requests'
export const rateSchema = z
  .strictObject({
    requests: z.number({ error: REQUESTS }).int(REQUESTS).positive(REQUESTS),
    windowMs: z.number({ error: WINDOW }).int(WINDOW).min(1, WINDOW).max(86_400_000, WINDOW),
    /** how many may start together after a quiet spell; at most `requests` */
    burst: z.number({ error: BURST }).int(BURST).positive(BURST).default(1),
  })
  .refine((r) => r.burst <= r.requests, { path: ['burst'], message: 'must not be above requests' })

const LIMIT = "a whole number ≥ 1 in progress at once, or null for the catalog's default"
export const catalogEntrySchema = z.strictObject({
  method: z.string().regex(/^[A-Z]+$/, 'an upper-case HTTP method such as GET'),
  path: z.string().regex(TEMPLATE, 'a path template such as /accounts/{id}/contacts'),
  // null: the API publishes no limit ("–" in docs/api/limits-and-versions.md §4); the proxy applies `limits.default`
  limit: z.number({ error: LIMIT }).int(LIMIT).positive(LIMIT).nullable(),
  /** a rate as well as (or instead of) the concurrency limit */
  rate: rateSchema.optional(),
  since: z
    .string()
    .regex(/^\d+\.\d+$/, "a version <major>.<minor> (quote it in YAML: '2.10')")
    .optional(),
})

export const catalogFileSchema = z.strictObject({
  endpoints: z.array(catalogEntrySchema).min(1),
})

/** Reads and validates `config/endpoints.yaml` (or another catalog file). Throws CatalogInvalidError. */
export function readCatalogFile(file: string): CatalogEntry[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new CatalogInvalidError(`cannot read the endpoint catalog ${file}: ${(err as Error).message}`)
  }
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (err) {
    throw new CatalogInvalidError(`the endpoint catalog ${file} is not valid YAML: ${(err as Error).message}`)
  }
  const result = catalogFileSchema.safeParse(doc)
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    throw new CatalogInvalidError(`the endpoint catalog ${file} is invalid:\n  - ${problems.join('\n  - ')}`)
  }
  return result.data.endpoints.map(({ since, rate, ...rest }) => ({
    ...rest,
    ...(since === undefined ? {} : { since }),
    ...(rate === undefined ? {} : { rate }),
  }))
}
