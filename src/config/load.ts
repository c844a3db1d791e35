import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import type { z } from 'zod'
import { appIssueMessage, appListPath, ORG_KEY_ENV_PREFIX, shownAppKey } from '../apps/sources.js'
import { ConfigError } from '../errors/config-error.js'
import { ENV_PREFIX, envBindings, parseEnvValue } from './env.js'
import { MASK, maskSecretText } from '../log/secret-text.js'
import { settingsSchema, type Settings } from './schema.js'
import { upstreamKeysAt } from '../upstreams/settings.js'


const bindings = envBindings(settingsSchema)
const envNameOf = new Map(bindings.map((b) => [b.path.join('.'), b.name]))

type Tree = Record<string, unknown>
const isTree = (v: unknown): v is Tree => typeof v === 'object' && v !== null && !Array.isArray(v)

function setPath(target: Tree, path: readonly string[], value: unknown): void {
  let node = target
  for (const key of path.slice(0, -1)) {
    const next = node[key]
    node = isTree(next) ? next : (node[key] = {})
  }
  node[path[path.length - 1]!] = value
}

/** Library messages (yaml's code frame) can run over lines; a start-up failure is one line. */
export const firstLine = (text: string): string => text.split('\n', 1)[0]!.trim()

function readFile(file: string): Tree {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError(`SLUICE_CONFIG: cannot read ${file}: ${firstLine((err as Error).message)}`, [])
  }
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (err) {
    throw new ConfigError(`SLUICE_CONFIG: ${file} is not valid YAML: ${firstLine((err as Error).message)}`, [])
  }
  if (doc == null) return {}
  if (!isTree(doc)) throw new ConfigError(`SLUICE_CONFIG: ${file} must hold a mapping of settings`, [])
  return doc
}

/**
 * Where each value came from, by key path (`queue.maxWaitMs`): `env SLUICE_…` or `file <path>`;
 * null for a value the caller gave (`loadSettings`' overrides), which has no origin to name.
 */
type Origins = Map<string, string | null>

/**
 * Records that the value at `path` now comes from `origin`, forgetting the origins below it: an env
 * var's JSON record replaces the file's whole subtree, and an error inside it names the env var.
 */
function setOrigin(origins: Origins, path: readonly string[], origin: string | null): void {
  const key = path.join('.')
  const below = `${key}.`
  for (const k of [...origins.keys()]) if (k.startsWith(below)) origins.delete(k)
  origins.set(key, origin)
}

/** Records `file <path>` for every leaf of the file's tree (record entries included). */
function recordFileOrigins(tree: Tree, file: string, origins: Origins, path: string[] = []): void {
  for (const [key, value] of Object.entries(tree)) {
    const at = [...path, key]
    if (isTree(value)) recordFileOrigins(value, file, origins, at)
    origins.set(at.join('.'), `file ${file}`)
  }
}

/** The origin of the value at `path` or of the nearest enclosing value that has one (none past a value the caller gave). */
function originAt(origins: Origins, path: readonly string[]): string | undefined {
  for (let n = path.length; n > 0; n--) {
    const found = origins.get(path.slice(0, n).join('.'))
    if (found !== undefined) return found ?? undefined
  }
  return undefined
}

const valueAt = (tree: unknown, path: readonly PropertyKey[]): unknown =>
  path.reduce<unknown>((node, key) => (isTree(node) ? node[String(key)] : Array.isArray(node) ? (node as unknown[])[Number(key)] : undefined), tree)

// Settings whose values are credentials, never shown even in an error; the app list as a whole, since
// a token may be pasted where its hash belongs (docs/configuration.md, "When a setting is wrong").
const SECRET_SETTING = /(token|password|secret)$|^apps$|^apps\.list(\.|$)/i
const MAX_SHOWN = 80

/** A bad value as an error shows it: JSON, cut short, credentials masked (a URL's password, a token). */
export function shownValue(path: readonly string[], value: unknown): string {
  if (SECRET_SETTING.test(path.join('.'))) return `"${MASK}"`
  const text = typeof value === 'string' ? JSON.stringify(maskSecretText(value)) : (JSON.stringify(value) ?? String(value))
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}…` : text
}

/** A path as an error shows it: under `apps`, keys by their place unless plain words (docs/observability.md, "What a client's values can reach"). */
function shownPath(path: readonly PropertyKey[], merged: Tree): string[] {
  const raw = path.map(String)
  if (raw[0] !== 'apps' || raw.length < 2) return raw
  if (raw[1] === 'list') return ['apps', 'list', ...appListPath(path.slice(2), valueAt(merged, ['apps', 'list']))]
  return ['apps', shownAppKey(raw[1]!, valueAt(merged, ['apps'])), ...raw.slice(2)]
}

/**
 * A value that matches no branch of a union (a catalog: a file's path or a mapping) is reported by
 * the branch of its kind, at the field inside it (`upstreams.1.catalog.default`), not as "Invalid
 * input"; a value of no branch's kind keeps the union's own message, which says what to write.
 */
function unionBranch(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return [issue]
  const branch = issue.errors.find((b) => !b.every((i) => i.code === 'invalid_type' && i.path.length === 0))
  if (branch === undefined) return [issue]
  return branch.flatMap((i) => unionBranch({ ...i, path: [...issue.path, ...i.path] }))
}

function describe(issue: z.core.$ZodIssue, merged: Tree, origins: Origins): string {
  const path = issue.path.map(String)
  const underApps = path[0] === 'apps'
  const key = shownPath(issue.path, merged).join('.') || '(root)'
  const origin = originAt(origins, path)
  if (issue.code === 'unrecognized_keys') {
    const shown = underApps ? issue.keys.map((k) => shownAppKey(k, valueAt(merged, issue.path))) : issue.keys
    const where = key === '(root)' ? '' : ` in ${key}`
    const names = shown.map((k) => (key === '(root)' ? k : `${key}.${k}`))
    const from = originAt(origins, [...path, issue.keys[0]!])
    const known = upstreamKeysAt(path)
    const allowed = known === undefined ? '' : `; known here: ${known.join(', ')}`
    return `unknown setting${issue.keys.length > 1 ? 's' : ''}${where}: ${shown.join(', ')}${from ? ` (${from}, key ${names.join(', ')})` : ''}${allowed}`
  }
  const value = valueAt(merged, issue.path)
  const source = origin === undefined ? '' : origin.startsWith('env ') ? ` (${origin})` : ` (${origin}, key ${key})`
  const env = envNameOf.get(key)
  const named = origin === undefined && env ? ` (${env})` : source
  // A bad record key: the key is what was wrong, not the value under it (an app's key is never shown: see shownPath).
  if (issue.code === 'invalid_key') return underApps ? `${key}${named}: ${appIssueMessage(issue, undefined)}` : `${key}${named}: ${issue.message}; got the key ${JSON.stringify(path[path.length - 1])}`
  const got = value === undefined ? 'it is not set' : `got ${shownValue(path, value)}`
  return `${key}${named}: ${issue.message}; ${got}`
}

/**
 * Settings from defaults < the `SLUICE_CONFIG` file < `SLUICE_*` env vars, validated once; throws a
 * one-line ConfigError naming every bad key (docs/configuration.md, "When a setting is wrong").
 */
export function loadSettings(env: NodeJS.ProcessEnv = process.env, overrides: Tree = {}): Settings {
  const origins: Origins = new Map()
  const merged: Tree = env.SLUICE_CONFIG ? readFile(env.SLUICE_CONFIG) : {}
  if (env.SLUICE_CONFIG) recordFileOrigins(merged, env.SLUICE_CONFIG, origins)
  for (const b of bindings) {
    const raw = env[b.name]
    if (raw === undefined) continue
    setPath(merged, b.path, parseEnvValue(b.kind, raw))
    setOrigin(origins, b.path, `env ${b.name}`)
  }
  deepMerge(merged, overrides, origins)
  const result = settingsSchema.safeParse(merged)
  if (!result.success) {
    const problems = result.error.issues.flatMap(unionBranch).map((issue) => describe(issue, merged, origins))
    throw new ConfigError(`invalid setting${problems.length > 1 ? 's' : ''}: ${problems.join('; ')}`, problems)
  }
  originsOf.set(result.data, origins)
  return result.data
}

const originsOf = new WeakMap<Settings, Origins>()

/**
 * Where a setting of loaded settings came from: `env SLUICE_…`, `file <path>, key <key>`, or
 * undefined for a default. For errors found after loading (an override naming no endpoint).
 */
export function originOf(settings: Settings, key: string): string | undefined {
  const origin = originAt(originsOf.get(settings) ?? new Map<string, string>(), key.split('.'))
  return origin === undefined ? undefined : origin.startsWith('file ') ? `${origin}, key ${key}` : origin
}

const knownEnv = new Set([...bindings.map((b) => b.name), `${ENV_PREFIX}CONFIG`])

/**
 * `SLUICE_*` variables that are no setting: logged as a warning at start, not refused, because
 * Kubernetes injects `SLUICE_SERVICE_HOST`-style variables for a Service named sluice.
 */
export function unknownEnvVars(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.keys(env).filter((k) => k.startsWith(ENV_PREFIX) && !knownEnv.has(k) && !k.startsWith('SLUICE_TEST_') && !k.startsWith(ORG_KEY_ENV_PREFIX) && !k.startsWith('SLUICE_BENCH_'))
}

function deepMerge(target: Tree, source: Tree, origins: Origins, path: readonly string[] = []): void {
  for (const [k, v] of Object.entries(source)) {
    const cur = target[k]
    if (isTree(v) && isTree(cur)) deepMerge(cur, v, origins, [...path, k])
    else {
      target[k] = v
      setOrigin(origins, [...path, k], null)
    }
  }
}

/** The settings with nothing set: defaults only. */
export const defaultSettings = (): Settings => settingsSchema.parse({})
