import { z } from 'zod'

/** Settings of the endpoint limits: the catalog's published limits, and what applies where none is published. */
export const limitSettingsSchema = z.strictObject({
  /** limit of endpoints listed with "–" in docs/api/limits-and-versions.md §4, and of paths not in the catalog */
  default: z.number().int().positive().default(5),
  /** per-endpoint limits, keyed by endpoint id: `{"POST /accounts/search": 1}` */
  overrides: z
    .record(z.string().regex(/^[A-Z]+ \/\S*$/, 'an endpoint id such as "GET /accounts/{id}"'), z.number().int().positive())
    .default({}),
})
