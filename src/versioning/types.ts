import type { Registry } from 'prom-client'
import type { Calendar } from './calendar.js'
import type { OrgLabels } from './metrics.js'

/** What a version is on a given day. */
export type VersionStateName =
  /** released (or release date unknown), no retirement announced */
  | 'supported'
  /** supported, with a retirement date ahead: `Deprecation` and `Sunset` headers */
  | 'deprecated'
  /** on or after its retirement date, or learned from an upstream 410 */
  | 'retired'
  /** in the calendar with a release date still ahead: passed through, never a rewrite target */
  | 'unreleased'
  /** a well-formed version the calendar does not list: passed through (an upstream 410 is learned) */
  | 'unknown'

/** How one request's version is handled. Decisions are shared between requests: never mutate one. */
export interface VersionDecision {
  /** the header value as the client sent it (validated, trimmed); undefined when there was none */
  readonly requested: string | undefined
  /** the value to send upstream in the header; undefined → send none */
  readonly upstream: string | undefined
  /** `pass`: as asked; `rewrite`: a retired version replaced; `pin`: no header, `versions.pin` sent */
  readonly action: 'pass' | 'rewrite' | 'pin'
  /** set when a retired version was replaced: the version replaced (the pin itself when a retired pin was rewritten) */
  readonly rewrittenFrom?: string
  /** to add to the client's response: Deprecation, Sunset, x-sluice-api-version, notices, gate warnings */
  readonly responseHeaders: Readonly<Record<string, string>>
  /** for the request's log line */
  readonly warnings: readonly string[]
}

/** One version as /status and `npm run versions` show it. */
export interface VersionState {
  readonly version: string
  readonly state: VersionStateName
  /** whether config/versions.yaml (or `versions.retirements`) lists it */
  readonly inCalendar: boolean
  readonly released?: string
  /** the retirement day in force: the calendar's, the settings', or the day a 410 was learned */
  readonly retiresOn?: string
  readonly retirementSource?: 'calendar' | 'settings' | 'learned'
  /** whole days from today to `retiresOn` (negative once retired) */
  readonly daysUntilRetirement?: number
  /** the day sent in the `Deprecation` header (only for `deprecated`) */
  readonly deprecation?: string
  /** what a request naming this version gets today */
  readonly action: 'pass' | 'rewrite' | 'reject'
  /** the version sent upstream for `pass` and `rewrite` */
  readonly upstream?: string
  /** a retirement learned from upstream 410s: the evidence, and when it lapses unless a 410 confirms it */
  readonly learned?: {
    readonly answers: number
    readonly instances: number
    readonly endpoints: readonly string[]
    readonly first: string
    readonly last: string
    readonly expires: string
    readonly confirmations: number
  }
  /** upstream 410s on record for this version, not (yet) enough to learn a retirement */
  readonly recent410s?: number
  readonly added: readonly { readonly what: string; readonly on?: string }[]
  /** requests that named this version, since start (this replica) */
  readonly requests: number
}

export interface VersionsSnapshot {
  /** today as the versioning sees it (UTC), YYYY-MM-DD */
  readonly today: string
  /** the header's name as configured */
  readonly header: string
  /** the calendar file in use */
  readonly calendar: string
  readonly policy: {
    readonly retired: 'reject' | 'rewrite'
    readonly rewriteTo: 'next' | 'latest' | 'map'
    readonly missing: 'pass' | 'pin'
    readonly pin?: string
    readonly gate: 'warn' | 'reject' | 'off'
  }
  /** the newest supported version today */
  readonly latest?: string
  /** ascending: every calendar version, plus unknown versions seen */
  readonly versions: readonly VersionState[]
  /** requests without the header */
  readonly noHeader: {
    readonly action: 'pass' | 'pin' | 'reject'
    readonly upstream?: string
    readonly requests: number
  }
  /** requests with a malformed header (answered 400) */
  readonly malformed: number
  readonly apiV1?: { readonly retired: string; readonly isRetired: boolean }
}

/** The logger the versioning writes to (pino's and Fastify's fit). */
export interface VersioningLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

export interface VersioningDeps {
  /** the clock (tests pass fixed dates); default `() => new Date()` */
  readonly now?: () => Date
  readonly log: VersioningLog
  /** where the `sluice_version_*` metrics are registered; none → counted but not exported */
  readonly registry?: Registry
  /** an already loaded calendar; default: `loadCalendar(settings.calendarFile)` */
  readonly calendar?: Calendar
  /** the metrics' organisation labels, when series carry `org` (metrics.instanceLabel) */
  readonly orgs?: OrgLabels
}

/** Who a request sent upstream was for: what a 410 is evidence from. */
export interface UpstreamSource {
  readonly instance: string
  /** the catalog's endpoint id */
  readonly endpoint: string
}

/** The endpoint a request matched, as the catalog describes it. */
export interface VersionedEndpoint {
  /** `METHOD /template` (a metrics label: must come from the catalog, never from raw paths) */
  readonly id: string
  /** the version that introduced it, `<major>.<minor>` */
  readonly since?: string | undefined
}

export interface Versioning {
  /** the version header's name, lower-case */
  readonly headerName: string
  /**
   * Decides how a request's version is handled, or throws its local answer (docs/versioning.md,
   * "What happens to a request"); `instance` is for the `org` label. Allocates nothing on the common path.
   */
  decide(
    headerValue: string | readonly string[] | undefined,
    endpoint: VersionedEndpoint,
    instance?: string,
  ): VersionDecision
  /** The upstream answered `status` to a request sent with `decision`: 410s may teach a retirement, a 2xx clears them. */
  observeUpstream(decision: VersionDecision, status: number, source: UpstreamSource): void
  /** Throws ApiV1RetiredError (410) when the calendar says API v1 is retired today. */
  rejectApiV1(): void
  /** For /status, the status page and `npm run versions`. */
  snapshot(): VersionsSnapshot
}
