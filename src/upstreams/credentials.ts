/**
 * How the key sluice holds goes to one upstream (docs/upstreams.md, "Credentials"): per upstream, so
 * an API where the apps keep their own tokens passes them untouched while the CRM's keys are injected.
 */
export interface Injection {
  /** false: sluice holds no key for this upstream; the app's own credentials pass as sent */
  readonly inject: boolean
  /** the request header that carries the key (lower case) */
  readonly header: string
  /** `basic`: `Basic base64(<instance>:<key>)`; `bearer`: `Bearer <key>`; `none`: the key as it is */
  readonly scheme: 'basic' | 'bearer' | 'none'
}

/** The CRM's own: `Authorization: Basic base64(orgId:apiKey)` when `credentials.inject` is on. */
export const crmInjection = (inject: boolean): Injection => ({ inject, header: 'authorization', scheme: 'basic' })
