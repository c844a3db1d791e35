import { z } from 'zod'

/** Settings of API version handling (issue: API versions). */
export const versionSettingsSchema = z.strictObject({
  /** the request header carrying `<major>.<minor>` */
  header: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/).default('NEON-API-VERSION'),
})
export type VersionSettings = z.output<typeof versionSettingsSchema>
