import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import type { z } from 'zod'
import { ConfigError } from '../errors/config-error.js'
import { ENV_PREFIX, envBindings, parseEnvValue } from './env.js'
import { settingsSchema, type Settings } from './schema.js'


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

function readFile(file: string): Tree {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError(`SLUICE_CONFIG: cannot read ${file}: ${(err as Error).message}`, [])
  }
  let doc: unknown
  try {
    doc = parseYaml(text)
  } catch (err) {
    throw new ConfigError(`SLUICE_CONFIG: ${file} is not valid YAML: ${(err as Error).message}`, [])
  }
  if (doc == null) return {}
  if (!isTree(doc)) throw new ConfigError(`SLUICE_CONFIG: ${file} must hold a mapping of settings`, [])
  return doc
}

function describe(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String)
  const key = path.join('.') || '(root)'
  const env = envNameOf.get(key)
  if (issue.code === 'unrecognized_keys') {
    const where = key === '(root)' ? '' : ` in ${key}`
    return `unknown setting${issue.keys.length > 1 ? 's' : ''}${where}: ${issue.keys.join(', ')}`
  }
  return `${key}${env ? ` (${env})` : ''}: ${issue.message}`
}

/**
 * Settings from built-in defaults < the YAML file named by `SLUICE_CONFIG` < `SLUICE_*` env vars,
 * validated once. Throws ConfigError naming every bad key.
 */
export function loadSettings(env: NodeJS.ProcessEnv = process.env, overrides: Tree = {}): Settings {
  const merged: Tree = env.SLUICE_CONFIG ? readFile(env.SLUICE_CONFIG) : {}
  for (const b of bindings) {
    const raw = env[b.name]
    if (raw !== undefined) setPath(merged, b.path, parseEnvValue(b.kind, raw))
  }
  deepMerge(merged, overrides)
  const result = settingsSchema.safeParse(merged)
  if (!result.success) {
    const problems = result.error.issues.map(describe)
    throw new ConfigError(`invalid settings:\n  - ${problems.join('\n  - ')}`, problems)
  }
  return result.data
}

const knownEnv = new Set([...bindings.map((b) => b.name), `${ENV_PREFIX}CONFIG`])

/**
 * `SLUICE_*` variables that are no setting: logged as a warning at start, not refused, because
 * Kubernetes injects `SLUICE_SERVICE_HOST`-style variables for a Service named sluice.
 */
export function unknownEnvVars(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.keys(env).filter((k) => k.startsWith(ENV_PREFIX) && !knownEnv.has(k) && !k.startsWith('SLUICE_TEST_') && !k.startsWith('SLUICE_BENCH_'))
}

function deepMerge(target: Tree, source: Tree): void {
  for (const [k, v] of Object.entries(source)) {
    const cur = target[k]
    if (isTree(v) && isTree(cur)) deepMerge(cur, v)
    else target[k] = v
  }
}

/** The settings with nothing set: defaults only. */
export const defaultSettings = (): Settings => settingsSchema.parse({})
