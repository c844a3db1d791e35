import { refusal } from '../errors/refusal.js'

// Expected outcomes of client input, answered locally: no stack traces (they cost time and say nothing).

/** The version header is not exactly one `<major>.<minor>` (header name, an example, what is wrong). */
export const BadVersionHeaderError = refusal<[string, string, string]>(
  'SLUICE_BAD_VERSION_HEADER',
  'The %s header must hold one API version <major>.<minor> such as %s; %s',
  400,
  'bad_request',
  Error,
  false,
)

/**
 * The version is retired and the policy is `reject`, or a rewrite has nowhere to go. The message,
 * built once a day per version, names the version, its retirement date and the version to move to.
 */
export const VersionRetiredError = refusal<[string]>(
  'SLUICE_VERSION_RETIRED',
  '%s',
  410,
  'rejected_version',
  Error,
  false,
)

/** `versions.gate: reject`: the endpoint is newer than the version the request uses (endpoint, since, version). */
export const VersionTooOldError = refusal<[string, string, string]>(
  'SLUICE_VERSION_TOO_OLD',
  '%s was added in API version %s; this request uses %s. Send a newer version in the version header',
  400,
  'rejected_version',
  Error,
  false,
)

/** A `/v1` request after API v1's retirement (retirement date). */
export const ApiV1RetiredError = refusal<[string]>(
  'SLUICE_API_V1_RETIRED',
  'API v1 was retired on %s; move to API v2',
  410,
  'rejected_version',
  Error,
  false,
)

export type BadVersionHeaderError = InstanceType<typeof BadVersionHeaderError>
export type VersionRetiredError = InstanceType<typeof VersionRetiredError>
export type VersionTooOldError = InstanceType<typeof VersionTooOldError>
export type ApiV1RetiredError = InstanceType<typeof ApiV1RetiredError>
