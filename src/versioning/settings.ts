import { z } from 'zod'

/** `<major>.<minor>` without leading zeros, as the API writes its versions (`2.9`, `2.10`). */
export const VERSION_PATTERN = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/
const version = z.string().regex(VERSION_PATTERN, 'a version <major>.<minor> such as 2.10')
const isoDay = z.iso.date('a date YYYY-MM-DD')
/** zod's own message for a bad record key says only "Invalid key in record". */
const versionKeys = { error: (issue: { code?: string }) => (issue.code === 'invalid_key' ? 'the key is not a version <major>.<minor> such as 2.10' : undefined) }

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
    /** an upstream 410 for a version the calendar thinks alive retires it (on this replica) from then on */
    learnRetirements: z.boolean().default(true),
    /** `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) response headers for versions with a retirement ahead */
    deprecationHeaders: z.boolean().default(true),
  })
  .refine((s) => s.missing !== 'pin' || s.pin !== undefined, {
    path: ['pin'],
    message: 'required when versions.missing is "pin"',
  })
export type VersionSettings = z.output<typeof versionSettingsSchema>
