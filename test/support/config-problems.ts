import { loadSettings } from '../../src/config/load.js'
import { ConfigError } from '../../src/errors/config-error.js'

/** What loadSettings refuses in that environment (README "Settings": errors name the key and where it came from); [] when it loads. */
export const problemsOf = (env: NodeJS.ProcessEnv): readonly string[] => {
  try {
    loadSettings(env)
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  return []
}
