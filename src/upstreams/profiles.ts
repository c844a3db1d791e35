import { fileURLToPath } from 'node:url'
import type { InstanceRule } from './settings.js'

/** A built-in description of an API (docs/upstreams.md, "Profiles"); an upstream's own fields replace its parts. */
export interface Profile {
  /** `{ crm: true }`: config/endpoints.yaml with `limits.default` and `limits.overrides`; else a catalog file (upstream catalog shape) */
  readonly catalog: { readonly crm: true } | { readonly file: string }
  readonly instance: InstanceRule
  /** statuses besides 429 that mean "over the limit, try again" when they carry Retry-After */
  readonly retryWithRetryAfter: readonly number[]
  /** whether the CRM's version calendar and policy apply (`versions.*`) */
  readonly versions: boolean
}

const profileFile = (name: string): string => fileURLToPath(new URL(`../../config/profiles/${name}`, import.meta.url))

export const PROFILES: Readonly<Record<string, Profile>> = {
  /** the CRM API v2, production (`upstream`) and trial (https://trial.neoncrm.com/v2) alike */
  'neon-v2': { catalog: { crm: true }, instance: { from: 'basic' }, retryWithRetryAfter: [], versions: true },
  /** GitHub REST: 100 concurrent requests per token; the secondary limit answers 403 (or 429) with Retry-After */
  'github-rest': {
    catalog: { file: profileFile('github-rest.yaml') },
    // GitHub takes `token T` and `Bearer T` alike: one token, one instance (docs/upstreams.md, "Instance")
    instance: { from: 'credential', schemeAliases: { token: 'bearer' } },
    retryWithRetryAfter: [403],
    versions: false,
  },
}

export const PROFILE_NAMES = Object.keys(PROFILES)
