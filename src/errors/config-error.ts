/**
 * A setting that cannot be used; the message names the key (and its env var) and what is allowed.
 * Its own module so that the settings loader (src/config) and the modules whose settings it composes
 * (versioning's calendar, ...) can both throw it without importing each other.
 */
export class ConfigError extends Error {
  readonly code = 'SLUICE_CONFIG_INVALID'
  constructor(
    message: string,
    readonly problems: readonly string[],
  ) {
    super(message)
    this.name = 'ConfigError'
  }
}
