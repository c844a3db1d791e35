/** Response headers the versioning adds (lower-case, as Node sends them). */
export const VERSION_RESPONSE_HEADERS = {
  /** the version sent upstream when it is not the one the request asked for (rewrite, pin) */
  used: 'x-sluice-api-version',
  /** why: "API version 2.9 was retired on 2026-09-12; this request was sent as 2.10" */
  notice: 'x-sluice-version-notice',
  /** the gate: "GET /customObjects was added in API version 2.10; this request uses 2.9" */
  warning: 'x-sluice-version-warning',
  /** RFC 9745, `@<unix seconds>` */
  deprecation: 'deprecation',
  /** RFC 8594, an HTTP-date */
  sunset: 'sunset',
} as const
