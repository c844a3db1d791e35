import { z } from 'zod'
import { rateSchema } from './file.js'

/** Settings of the endpoint limits: the catalog's published limits, and what applies where none is published. */
export const limitSettingsSchema = z.strictObject({
  /** limit of endpoints listed with "–" in docs/api/limits-and-versions.md §4, and of paths not in the catalog */
  default: z.number().int().positive().default(5),
  /** per-endpoint limits, keyed by endpoint id: `{"POST /accounts/search": 1}` */
  overrides: z
    .record(
      z.string().regex(/^[A-Z]+ \/\S*$/, 'an endpoint id such as "GET /accounts/{id}"'),
      z.number().int().positive(),
    )
    .default({}),
  /** rates (N per window) by endpoint id, `*` for every endpoint without one in the catalog: `{"*": {"requests": 100, "windowMs": 10000}}` */
  rates: z
    .record(
      z.string().regex(/^\*$|^[A-Z]+ \/\S*$/, 'an endpoint id such as "GET /accounts/{id}", or * for every endpoint'),
      rateSchema,
    )
    .default({}),
  /** added to every rate's window: the spread of the way to the API (network, a busy event loop) never brings two starts within one window (docs/redis-limiter.md, "Rates") */
  rateMarginMs: z.number().int().min(0).max(60_000).default(100),
})
