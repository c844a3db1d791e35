import { refusal } from '../errors/refusal.js'

/** Answers of app identity (README "Apps: identity, access and keys"); never name a token or key. */

export const AppUnauthenticatedError = refusal(
  'SLUICE_APP_UNAUTHENTICATED',
  'sluice requires an app token: send it as the Basic-auth password (orgId:token) or in the app token header',
  401,
  'unauthenticated',
)

export const AppOrgForbiddenError = refusal<[string, string]>(
  'SLUICE_APP_ORG_FORBIDDEN',
  'The app %s may not use organisation %s',
  403,
  'forbidden',
)

export const AppEndpointForbiddenError = refusal<[string, string]>(
  'SLUICE_APP_ENDPOINT_FORBIDDEN',
  'The app %s may not use %s',
  403,
  'forbidden',
)

export const NoApiKeyError = refusal<[string]>(
  'SLUICE_NO_API_KEY',
  'sluice holds no API key for organisation %s',
  403,
  'forbidden',
)

const APP = Symbol('sluice.app')
const ORG_ALLOWED = Symbol('sluice.org-allowed')

/**
 * A refusal of a known app, counted as that app's; `orgAllowed`: its organisation may be recorded as
 * named (docs/observability.md, "What a client's values can reach").
 */
export function refusalOf<E extends Error>(err: E, app: string, orgAllowed: boolean): E {
  return Object.assign(err, { [APP]: app, [ORG_ALLOWED]: orgAllowed })
}

/** The app a refusal was for (refusalOf), or undefined: a 401 names no app. */
export const appOfRefusal = (err: unknown): string | undefined => {
  const app = (err as { [APP]?: unknown } | null)?.[APP]
  return typeof app === 'string' ? app : undefined
}

/** Whether a refused app may use the organisation it asked for (a 403 for an endpoint, or for a missing key). */
export const orgAllowedInRefusal = (err: unknown): boolean =>
  (err as { [ORG_ALLOWED]?: unknown } | null)?.[ORG_ALLOWED] === true
