import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { ConfigError } from '../errors/config-error.js'
import { appListSchema, type AppList } from './settings.js'

/** Env vars `SLUICE_ORG_KEY_<orgId>` hold organisations' API keys too (README "Apps: identity, access and keys"). */
export const ORG_KEY_ENV_PREFIX = 'SLUICE_ORG_KEY_'

/**
 * The apps of `apps.file`: a YAML mapping in the shape of `apps.list`. Errors name the file and the
 * key, never a value (the file is a secret).
 */
export function readAppFile(file: string): AppList {
  let doc: unknown
  try {
    doc = parseYaml(readFileSync(file, 'utf8'))
  } catch (err) {
    const reason = (err as { code?: string }).code === 'ENOENT' ? 'no such file' : 'cannot be read as YAML'
    throw new ConfigError(`apps.file (SLUICE_APPS_FILE): ${file}: ${reason}`, [])
  }
  const parsed = appListSchema.safeParse(doc ?? {})
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`)
    throw new ConfigError(`apps.file (SLUICE_APPS_FILE): ${file}: ${problems.join('; ')}`, problems)
  }
  return parsed.data
}

/**
 * Organisations' API keys: one file per organisation in `keysDir` (the file's name is the org id, its
 * content the key; names starting with `.` are skipped, as Kubernetes keeps its `..data` links there),
 * then `SLUICE_ORG_KEY_<orgId>` env vars.
 */
export function readOrgKeys(keysDir: string | undefined, env: NodeJS.ProcessEnv): Map<string, string> {
  const keys = new Map<string, string>()
  if (keysDir !== undefined) {
    let names: string[]
    try {
      names = readdirSync(keysDir)
    } catch {
      throw new ConfigError(`credentials.keysDir (SLUICE_CREDENTIALS_KEYS_DIR): ${keysDir} is not a readable directory`, [])
    }
    for (const name of names) {
      if (name.startsWith('.')) continue
      const path = join(keysDir, name)
      try {
        if (!statSync(path).isFile()) continue
        const key = readFileSync(path, 'utf8').trim()
        if (key !== '') keys.set(name, key)
      } catch {
        throw new ConfigError(`credentials.keysDir (SLUICE_CREDENTIALS_KEYS_DIR): the key file of organisation ${name} cannot be read`, [])
      }
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith(ORG_KEY_ENV_PREFIX) && name.length > ORG_KEY_ENV_PREFIX.length && value !== undefined && value.trim() !== '') {
      keys.set(name.slice(ORG_KEY_ENV_PREFIX.length), value.trim())
    }
  }
  return keys
}
