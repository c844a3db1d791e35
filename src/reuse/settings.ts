import { z } from 'zod'

const endpointId = z
  .string()
  .regex(/^(GET|HEAD) \/\S*$/, 'a GET or HEAD endpoint id such as "GET /properties/countries"')

/**
 * Coalescing identical reads (README "Spending fewer permits"): concurrent GET/HEAD requests that
 * would get the same answer share one upstream call and one permit.
 */
export const coalesceSettingsSchema = z.strictObject({
  /** share one upstream call between identical concurrent GET/HEAD requests */
  enabled: z.boolean().default(true),
  /** answers larger than this are neither shared nor cached: the other requests make their own call */
  maxBytes: z.number().int().positive().default(1_048_576),
})

/** The lookup-list cache: off until `endpoints` names some. */
export const cacheSettingsSchema = z.strictObject({
  /** endpoint ids whose 200 answers may be served from memory for `ttlMs`, e.g. `["GET /properties/countries"]` */
  endpoints: z.array(endpointId).default([]),
  /** how long a cached answer is served */
  ttlMs: z.number().int().positive().default(300_000),
  /** most answers kept; the least recently used goes first */
  maxEntries: z.number().int().positive().default(1_000),
  /** most bytes of answers (bodies and headers) kept; the least recently used goes first */
  maxBytes: z.number().int().positive().default(33_554_432),
})

export type CoalesceSettings = z.output<typeof coalesceSettingsSchema>
export type CacheSettings = z.output<typeof cacheSettingsSchema>
