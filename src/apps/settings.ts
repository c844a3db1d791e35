import { z } from 'zod'

/**
 * Settings of app identity and credential injection (README "Apps: identity, access and keys").
 * Everything is off by default; `apps.enabled` turns app identity on.
 */

/** A token is configured only as its hash: `sha256:<64 hex>` or `sha512:<128 hex>`. */
export const tokenHash = z
  .string()
  .regex(
    /^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$/,
    'a token hash `sha256:<64 lower-case hex>` or `sha512:<128 lower-case hex>`',
  )

/** App names become log fields and metric labels: short, plain, and never starting with `_`. */
export const appName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'an app name of 1-64 letters, digits, `.`, `_` or `-`')

export const appSchema = z.strictObject({
  /** one hash, or two while a token is being rotated */
  tokens: z.array(tokenHash).min(1).max(2),
  /** organisations (Basic-auth usernames) the app may use; `*` for any */
  orgs: z.array(z.string().min(1)).min(1),
  /** endpoint ids (`POST /accounts/search`), methods (`GET`) or `*` */
  endpoints: z.array(z.string().min(1)).min(1).default(['*']),
})
export type AppConfig = z.output<typeof appSchema>

export const appListSchema = z.record(appName, appSchema)
export type AppList = z.output<typeof appListSchema>

export const appSettingsSchema = z.strictObject({
  /** turns app identity on: every request must carry a known app token */
  enabled: z.boolean().default(false),
  /** header an app may send its token in, instead of the Basic-auth password */
  tokenHeader: z
    .string()
    .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a valid HTTP header name')
    .transform((s) => s.toLowerCase())
    .default('x-sluice-app-token'),
  /** apps in the settings file (name → tokens, orgs, endpoints) */
  list: appListSchema.default({}),
  /** a YAML file (a mounted secret) holding more apps in the same shape; re-read while sluice runs */
  file: z.string().min(1).optional(),
  /** how often `apps.file` and `credentials.keysDir` are re-read (SIGHUP re-reads at once) */
  reloadIntervalMs: z.number().int().positive().default(5_000),
})
export type AppSettings = z.output<typeof appSettingsSchema>

export const credentialSettingsSchema = z.strictObject({
  /** sluice sets `Authorization: Basic orgId:apiKey` upstream from the keys it holds; needs apps.enabled */
  inject: z.boolean().default(false),
  /** directory with one file per organisation (file name = org id, content = API key), e.g. a mounted Kubernetes Secret */
  keysDir: z.string().min(1).optional(),
})
export type CredentialSettings = z.output<typeof credentialSettingsSchema>
