import { z } from 'zod'

/** `<major>.<minor>` without leading zeros, as the API writes its versions (`2.9`, `2.10`). */
export const VERSION_PATTERN = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/
const version = z.string().regex(VERSION_PATTERN, 'a version <major>.<minor> such as 2.10')
const isoDay = z.iso.date('a date YYYY-MM-DD')
/** zod's own message for a bad record key says only "Invalid key in record". */
const versionKeys = {
  error: (issue: { code?: string }) =>
    issue.code === 'invalid_key' ? 'the key is not a version <major>.<minor> such as 2.10' : undefined,
}

/** Settings of API version handling (docs/versioning.md). */
export const versionSettingsSchema = z
  .strictObject({
    /** the request header carrying `<major>.<minor>` */
    header: z
      .string()
      .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a valid HTTP header name')
      .default('NEON-API-VERSION'),
    /** the version calendar (YAML); unset → the one shipped with sluice, `config/versions.yaml` */
    calendarFile: z.string().min(1).optional(),
    /** retirement dates added to or replacing the calendar's, `{"2.10": "2027-03-13"}` (for env-only deployments) */
    retirements: z.record(version, isoDay, versionKeys).default({}),
    /** a request naming a retired version: `reject` answers 410 here; `rewrite` sends it upstream as a supported version */
    retired: z.enum(['reject', 'rewrite']).default('reject'),
    /** with `retired: rewrite`, the version sent instead: the `next` supported one, the `latest`, or by `rewriteMap` (unmapped → 410) */
    rewriteTo: z.enum(['next', 'latest', 'map']).default('next'),
    /** with `rewriteTo: map`, retired version → version to send, `{"2.9": "2.10"}` */
    rewriteMap: z.record(version, version, versionKeys).default({}),
    /** a request without the header: `pass` (the upstream uses its latest) or `pin` it to `pin` */
    missing: z.enum(['pass', 'pin']).default('pass'),
    /** the version sent for requests without the header when `missing: pin` */
    pin: version.optional(),
    /** an endpoint newer than the request's version: `warn` (header, log, metric), `reject` (400) or `off` */
    gate: z.enum(['warn', 'reject', 'off']).default('warn'),
    /**
     * upstream 410s for a version the calendar thinks alive retire it (on this replica) once the
     * evidence below says it is the version and not the resource that is gone
     */
    learnRetirements: z.boolean().default(true),
    /** 410s for one version needed to learn its retirement, within `learnWindowMs` */
    learnMinAnswers: z.number().int().min(1).default(3),
    /** distinct instances (organisations) among those 410s */
    learnMinInstances: z.number().int().min(1).default(2),
    /** distinct endpoints among those 410s */
    learnMinEndpoints: z.number().int().min(1).default(2),
    /** the window the 410s must fall in; a 2xx for the version in between starts the count again */
    learnWindowMs: z.number().int().positive().default(3_600_000),
    /** a learned retirement lapses after this long unless another 410 confirms it */
    learnExpiryMs: z.number().int().positive().default(86_400_000),
    /** `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) response headers for versions with a retirement ahead */
    deprecationHeaders: z.boolean().default(true),
  })
  .refine((s) => s.missing !== 'pin' || s.pin !== undefined, {
    path: ['pin'],
    message: 'required when versions.missing is "pin"',
  })
  // A rewrite only ever moves a request to a newer version than it asked for (README, API versions).
  .superRefine((s, ctx) => {
    for (const [from, to] of Object.entries(s.rewriteMap)) {
      if (!VERSION_PATTERN.test(to) || !VERSION_PATTERN.test(from) || compareVersionTexts(to, from) > 0) continue
      ctx.addIssue({
        code: 'custom',
        path: ['rewriteMap', from],
        input: to,
        message: `maps ${from} to ${to}, which is not newer; a rewrite only moves to a newer version`,
      })
    }
  })
function compareVersionTexts(a: string, b: string): number {
  const [am, an] = a.split('.').map(Number) as [number, number]
  const [bm, bn] = b.split('.').map(Number) as [number, number]
  return am - bm || an - bn
}

export type VersionSettings = z.output<typeof versionSettingsSchema>
