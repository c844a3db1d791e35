/**
 * A setting that cannot be used, naming the key and what is allowed; here so that src/config and the
 * areas it composes can both throw it (docs/development.md, "Rules the layout tests enforce").
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
