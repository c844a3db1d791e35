import { z } from 'zod'
import { adminSettingsShape } from '../admin/settings.js'
import { appSettingsSchema, credentialSettingsSchema } from '../apps/settings.js'
import { limitSettingsSchema } from '../catalog/settings.js'
import { fairnessSettingsSchema } from '../limiter/fairness/settings.js'
import { learningSettingsSchema } from '../limiter/learning/settings.js'
import { redisSettingsSchema } from '../limiter/redis/settings.js'
import { logSettingsShape } from '../log/settings.js'
import { metricsSettingsSchema } from '../metrics/settings.js'
import { proxySettingsShape } from '../proxy/settings.js'
import { versionSettingsSchema } from '../versioning/settings.js'
import { failFastSettingsSchema } from '../forecast/settings.js'
import { cacheSettingsSchema, coalesceSettingsSchema } from '../reuse/settings.js'
import { checkUpstreams } from '../upstreams/checks.js'
import { upstreamsSettingsSchema } from '../upstreams/settings.js'

/**
 * Every setting, composed from the modules that own them (docs/configuration.md,
 * "Where settings come from"). Objects are strict, so a typo in the file is an error, not ignored.
 */
export const settingsSchema = z.strictObject({
  ...proxySettingsShape,
  ...adminSettingsShape,
  ...logSettingsShape,
  limits: limitSettingsSchema.prefault({}),
  learning: learningSettingsSchema.prefault({}),
  coalesce: coalesceSettingsSchema.prefault({}),
  cache: cacheSettingsSchema.prefault({}),
  failFast: failFastSettingsSchema.prefault({}),
  redis: redisSettingsSchema.prefault({}),
  fairness: fairnessSettingsSchema.prefault({}),
  versions: versionSettingsSchema.prefault({}),
  metrics: metricsSettingsSchema.prefault({}),
  apps: appSettingsSchema.prefault({}),
  credentials: credentialSettingsSchema.prefault({}),
  upstreams: upstreamsSettingsSchema,
}).superRefine((settings, ctx) => {
  // Injected keys with no app identity would let anyone who reaches sluice use every organisation's key.
  if (settings.credentials.inject && !settings.apps.enabled) {
    ctx.addIssue({ code: 'custom', path: ['credentials', 'inject'], message: 'needs apps.enabled (SLUICE_APPS_ENABLED) on: without app identity anyone could use the keys' })
  }
  settings.upstreams.forEach((u, i) => {
    if (u.credentials?.inject === true && !settings.apps.enabled)
      ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'credentials', 'inject'], message: 'needs apps.enabled (SLUICE_APPS_ENABLED) on: without app identity anyone could use the keys' })
  })
  for (const problem of checkUpstreams(settings.basePath, settings.upstreams)) ctx.addIssue({ code: 'custom', ...problem })
})

export type Settings = z.output<typeof settingsSchema>
export type SettingsInput = z.input<typeof settingsSchema>
