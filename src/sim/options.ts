import { z } from 'zod'
import { DEFAULT_CATALOG_FILE } from '../catalog/index.js'
import { isRetiredAsPublished } from './retired.js'
import type { SimRate } from './rates.js'

export interface SimOptions {
  /** interface to listen on; default 127.0.0.1 */
  host: string
  /** port, 0 for a free one; default 0 */
  port: number
  /** fixed time each admitted request takes before its answer, ms; default 0 */
  latencyMs: number
  /** extra random latency, uniform in [0, jitterMs), ms; default 0 */
  jitterMs: number
  /** the endpoint catalog that tells which endpoint a request is for; default config/endpoints.yaml */
  catalogFile: string
  /** limit for endpoints listed with "–" (docs/api/limits-and-versions.md §4) and for paths not in the catalog; undefined = unlimited (default) */
  unlistedLimit: number | undefined
  /** per-endpoint limits by endpoint id (`{ "GET /groups/list": 2 }`), same rules as the proxy's `limits.overrides` */
  overrides: Record<string, number>
  /** limits the API keeps to itself, per organisation and endpoint id, over every other limit; `Sim.setHiddenLimit` changes them while running */
  hiddenLimits: Record<string, Record<string, number>>
  /** rates by endpoint id (`{ "GET /groups/list": { requests: 5, windowMs: 1000 } }`), per organisation, over the concurrency limit (rates.ts) */
  rates: Record<string, SimRate>
  /** answer this fraction (0–1) of admissible requests 429 anyway, to simulate pushback; default 0 */
  rejectRatio: number
  /** the date clock for retirement checks; default `() => new Date()` */
  now: () => Date
  /** whether a version header value names a retired version; default: the table of docs/api/limits-and-versions.md §9 (retired.ts) */
  isRetired: (version: string, now: Date) => boolean
  /** random source in [0, 1) for `rejectRatio` and jitter; default Math.random */
  random: () => number
  /** how many arrivals the log keeps (oldest dropped first); default 10 000 */
  arrivalLogSize: number
  /** how much of a request body the echo carries, in bytes; default 64 KiB */
  echoBodyBytes: number
  /** the GitHub REST stand-in under `/github`: requests in progress at once per token (GitHub publishes 100) */
  githubConcurrency: number
}

export const DEFAULT_SIM_OPTIONS: Readonly<SimOptions> = Object.freeze({
  host: '127.0.0.1',
  port: 0,
  latencyMs: 0,
  jitterMs: 0,
  catalogFile: DEFAULT_CATALOG_FILE,
  unlistedLimit: undefined,
  overrides: {},
  hiddenLimits: {},
  rates: {},
  rejectRatio: 0,
  now: () => new Date(),
  isRetired: isRetiredAsPublished,
  random: Math.random,
  arrivalLogSize: 10_000,
  echoBodyBytes: 65_536,
  githubConcurrency: 100,
})

const numbers = z.object({
  port: z.number().int().min(0).max(65535),
  latencyMs: z.number().min(0).finite(),
  jitterMs: z.number().min(0).finite(),
  unlistedLimit: z.number().int().min(1).optional(),
  hiddenLimits: z.record(z.string(), z.record(z.string(), z.number().int().min(1))),
  rates: z.record(z.string(), z.object({ requests: z.number().int().min(1), windowMs: z.number().int().min(1) })),
  rejectRatio: z.number().min(0).max(1),
  arrivalLogSize: z.number().int().min(0),
  echoBodyBytes: z.number().int().min(0),
  githubConcurrency: z.number().int().min(1),
})

/** Defaults filled in and numbers checked; throws a RangeError naming the bad option. */
export function resolveSimOptions(options: Partial<SimOptions> = {}): SimOptions {
  const defined = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<SimOptions>
  const resolved: SimOptions = { ...DEFAULT_SIM_OPTIONS, ...defined }
  const result = numbers.safeParse(resolved)
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`)
    throw new RangeError(`invalid sim options: ${problems.join('; ')}`)
  }
  return resolved
}
