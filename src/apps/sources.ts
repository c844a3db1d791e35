import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { ConfigError } from '../errors/config-error.js'
import { appListSchema, type AppList } from './settings.js'

/** Env vars `SLUICE_ORG_KEY_<orgId>` hold organisations' API keys too (README "Apps: identity, access and keys"). */
export const ORG_KEY_ENV_PREFIX = 'SLUICE_ORG_KEY_'

/**
 * Keys of an app list as errors show them: by place (`#2`), never by key, since a token pasted where
 * a name belongs looks like one (docs/observability.md, "What a client's values can reach").
 */
export function appListPath(path: readonly PropertyKey[], list: unknown): string[] {
  return path.length === 0 ? [] : [placeOf(String(path[0]), list), ...path.slice(1).map(String)]
}

/** `#n`: the place of `key` among the keys of `mapping`, from 1. */
function placeOf(key: string, mapping: unknown): string {
  const keys = typeof mapping === 'object' && mapping !== null && !Array.isArray(mapping) ? Object.keys(mapping) : []
  const place = keys.indexOf(key) + 1
  return place > 0 ? `#${place}` : '#?'
}

/** A key where app settings are, as an error shows it: a plain word (a misspelt setting) as it is, anything else (a token?) by its place. */
export const shownAppKey = (key: string, mapping: unknown): string =>
  /^[A-Za-z]{1,24}$/.test(key) ? key : placeOf(key, mapping)

/**
 * An issue's message (`mapping`: the object the issue is about); a bad app name says what a name must
 * be rather than zod's "Invalid key in record".
 */
export const appIssueMessage = (
  issue: { code: string; message: string; issues?: readonly { message: string }[]; keys?: readonly string[] },
  mapping: unknown,
): string =>
  issue.code === 'invalid_key'
    ? (issue.issues?.[0]?.message ?? issue.message)
    : issue.code === 'unrecognized_keys'
      ? `unknown setting${(issue.keys?.length ?? 0) > 1 ? 's' : ''} ${(issue.keys ?? []).map((k) => shownAppKey(k, mapping)).join(', ')}`
      : issue.message

const valueIn = (doc: unknown, path: readonly PropertyKey[]): unknown =>
  path.reduce<unknown>(
    (node, key) =>
      typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[String(key)] : undefined,
    doc,
  )

/**
 * The apps of `apps.file`: a YAML mapping in the shape of `apps.list`. Errors name the file and the
 * place of the bad app in it, never a key or a value (the file is a secret).
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
    const problems = parsed.error.issues.map(
      (i) => `${appListPath(i.path, doc).join('.') || '(root)'}: ${appIssueMessage(i, valueIn(doc, i.path))}`,
    )
    throw new ConfigError(`apps.file (SLUICE_APPS_FILE): ${file}: ${problems.join('; ')}`, problems)
  }
  return parsed.data
}

/** The API keys by organisation, and how many came from files of `credentials.keysDir` (the rest: SLUICE_ORG_KEY_*). */
export interface OrgKeys {
  readonly keys: Map<string, string>
  readonly files: number
}

/**
 * Organisations' API keys (docs/apps.md, "Keys that apps never hold"); names starting with `.` are
 * skipped, as Kubernetes keeps its `..data` links there.
 */
export function readOrgKeys(keysDir: string | undefined, env: NodeJS.ProcessEnv): OrgKeys {
  const keys = new Map<string, string>()
  let files = 0
  if (keysDir !== undefined) {
    let names: string[]
    try {
      names = readdirSync(keysDir)
    } catch {
      throw new ConfigError(
        `credentials.keysDir (SLUICE_CREDENTIALS_KEYS_DIR): ${keysDir} is not a readable directory`,
        [],
      )
    }
    for (const name of names) {
      if (name.startsWith('.')) continue
      const path = join(keysDir, name)
      try {
        if (!statSync(path).isFile()) continue
        const key = readFileSync(path, 'utf8').trim()
        if (key === '') continue
        keys.set(name, key)
        files++
      } catch {
        throw new ConfigError(
          `credentials.keysDir (SLUICE_CREDENTIALS_KEYS_DIR): the key file of organisation ${name} cannot be read`,
          [],
        )
      }
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (
      name.startsWith(ORG_KEY_ENV_PREFIX) &&
      name.length > ORG_KEY_ENV_PREFIX.length &&
      value !== undefined &&
      value.trim() !== ''
    ) {
      keys.set(name.slice(ORG_KEY_ENV_PREFIX.length), value.trim())
    }
  }
  return { keys, files }
}
