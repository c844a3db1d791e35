/** Where an endpoint's limit comes from. */
export type LimitSource =
  /** docs/api/limits-and-versions.md §4 gives 1 or 5 */
  | 'published'
  /** in the catalog, but §4 shows "–": the configured default applies */
  | 'unlisted'
  /** not in the catalog at all: the configured default applies, keyed by method + collapsed template */
  | 'unknown'
  /** set by `limits.overrides` in the settings */
  | 'override'
  /** an own upstream's catalog (docs/upstreams.md): every limit is the operator's, none learned */
  | 'configured'

export interface Endpoint {
  /** `METHOD /template`, e.g. `GET /accounts/{id}/contacts`; the limiter key (and, but for some unknown paths, its name: Catalog.nameOf) */
  readonly id: string
  readonly method: string
  /** the path template as docs/api/limits-and-versions.md §4 writes it, relative to the API v2 root */
  readonly template: string
  readonly limit: number
  readonly limitSource: LimitSource
  /** the API version that introduced the endpoint, `<major>.<minor>`, when §9 says */
  readonly since?: string
  /** a rate, N per window, beside the limit (the catalog's, else `limits.rates`); absent: none */
  readonly rate?: EndpointRate
}

/** N requests per window, the first `burst` at once (docs/redis-limiter.md, "Rates"). */
export interface EndpointRate {
  readonly requests: number
  readonly windowMs: number
  readonly burst: number
}

/** Why a path is refused before matching, answered 400 (docs/requests.md, "The proxy's own answers"). */
export type BadPathCode =
  | 'SLUICE_BAD_PATH'
  | 'SLUICE_BAD_PATH_TRAVERSAL'
  | 'SLUICE_BAD_PATH_SEPARATOR'
  | 'SLUICE_BAD_PATH_CONTROL_CHAR'
  | 'SLUICE_BAD_PATH_ENCODING'
  | 'SLUICE_BAD_PATH_SEGMENT'

export type MatchResult =
  | {
      readonly ok: true
      readonly endpoint: Endpoint
      /** the canonical path to forward: `/`-joined segments, static ones in the catalog's letter case */
      readonly path: string
    }
  | {
      readonly ok: false
      /** why the path was refused (see BadPathCode); answered 400 */
      readonly code: BadPathCode
      readonly message: string
    }

export interface Catalog {
  readonly endpoints: readonly Endpoint[]
  /**
   * Maps a request to its endpoint in O(path segments).
   * @param method upper-case HTTP method
   * @param rawPath the path below the API root as received (still percent-encoded, no query string)
   */
  match(method: string, rawPath: string): MatchResult
  /** The name of an endpoint id in the access log, the metrics and /status (names.ts); a plain function, so it may be handed around. */
  readonly nameOf: (endpointId: string) => string
}

/** One entry of `config/endpoints.yaml`. */
export interface CatalogEntry {
  readonly method: string
  /** the template as docs/api/limits-and-versions.md §4 writes it, e.g. `/customObjects/{idOrApiAlias}/fields/{fieldAlias}` */
  readonly path: string
  /** 1 or 5 as §4 lists it; null where §4 shows "–" or gives no limit */
  readonly limit: number | null
  readonly since?: string
  readonly rate?: EndpointRate
}

export interface CatalogOptions {
  /** limit of unlisted endpoints and of paths not in the catalog (`limits.default`) */
  readonly defaultLimit: number
  /** limits by endpoint id (`limits.overrides`), e.g. `{ "GET /accounts/{id}/memberships": 2 }` */
  readonly overrides: Readonly<Record<string, number>>
  /** rates by endpoint id (`limits.rates`), `*` for every endpoint without its own; an endpoint's catalog rate comes first */
  readonly rates?: Readonly<Record<string, EndpointRate>>
  /** every limit is the operator's (an own upstream's catalog): `configured`, never learned */
  readonly configured?: boolean
}
