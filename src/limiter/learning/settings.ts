import { z } from 'zod'

/** Settings of learned limits (README "Learned limits", docs/learned-limits.md). */
export const learningSettingsSchema = z
  .strictObject({
    /** learn the limits the API does not publish; off: "–" endpoints and unknown paths get `limits.default` */
    enabled: z.boolean().default(true),
    /** a learned limit never goes above this */
    ceiling: z.number().int().positive().default(50),
    /** nor below this */
    floor: z.number().int().positive().default(1),
    /** published limits may be lowered after upstream 429s (and climb back, never above the published limit) */
    lowerPublished: z.boolean().default(true),
    /** read rates and holds from answers: RateLimit-Policy, RateLimit, X-RateLimit-*, a throttled answer's Retry-After (docs/learned-limits.md, "Rates") */
    rates: z.boolean().default(true),
    /** a learned limit not used for this long is forgotten (starts again from `limits.default`) */
    idleMs: z.number().int().min(1_000).default(3_600_000),
  })
  .refine((s) => s.floor <= s.ceiling, { path: ['floor'], message: 'must not be above learning.ceiling' })
export type LearningSettings = z.output<typeof learningSettingsSchema>
