/** Where an endpoint's limit comes from. */
export type LimitSource =
  /** the seed's §4 table gives 1 or 5 */
  | 'published'
  /** in the catalog, but §4 shows "–": the configured default applies */
  | 'unlisted'
  /** not in the catalog at all: the configured default applies, keyed by method + collapsed template */
  | 'unknown'
  /** set by `limits.overrides` in the settings */
  | 'override'

export interface Endpoint {
  /** `METHOD /template`, e.g. `GET /accounts/{id}/contacts`; the limiter key and the metrics label */
  readonly id: string
  readonly method: string
  /** the path template as the seed writes it, relative to the API v2 root */
  readonly template: string
  readonly limit: number
  readonly limitSource: LimitSource
  /** the API version that introduced the endpoint, `<major>.<minor>`, when §9 says */
  readonly since?: string
}

export type MatchResult =
  | {
      readonly ok: true
      readonly endpoint: Endpoint
      /** the canonical path to forward: `/`-joined segments, static ones in the catalog's letter case */
      readonly path: string
    }
  | {
      readonly ok: false
      /** `SLUICE_BAD_PATH` and friends; answered 400 */
      readonly code: string
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
}
