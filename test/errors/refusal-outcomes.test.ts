import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import type { Outcome } from '../../src/record/record.js'

/** An error as the proxy's error handler reads it. */
type Rejection = Error & { code?: string; statusCode?: number; outcome?: Outcome }

/**
 * Each answer of the proxy port carries its outcome from where it is made (src/errors/refusal.ts):
 * a new refusal is one entry in its area's errors.ts, and no table elsewhere has to learn its code
 * (docs/development.md, "A new refusal").
 */
const SRC = fileURLToPath(new URL('../../src', import.meta.url))

/** Codes that never answer a request of the proxy port, so count under no outcome. */
const NOT_PROXY_ANSWERS = new Set([
  // they stop the start (docs/configuration.md)
  'SLUICE_CATALOG_INVALID',
  'SLUICE_CONFIG_UNKNOWN_OVERRIDE',
  'SLUICE_CONFIG_INVALID',
  // the admin port's own, which keeps no request records
  'SLUICE_ADMIN_UNAUTHORIZED',
  'SLUICE_ADMIN_HOST_REFUSED',
  // inside the Redis limiter: a lost lease aborts a permit, a script's timeout makes Redis unreachable
  'SLUICE_LEASE_LOST',
  'SLUICE_REDIS_TIMEOUT',
])

const ERROR_MODULES = ['errors.ts', 'admin/host.ts', 'admin/token.ts']

function errorModules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return errorModules(path)
    return ERROR_MODULES.some((m) => path.endsWith(`/${m}`)) ? [path] : []
  })
}

/** Every `SLUICE_` error class src/ exports, made once with no arguments. */
async function sluiceErrors(): Promise<Rejection[]> {
  const made: Rejection[] = []
  for (const file of errorModules(SRC)) {
    const exports = (await import(pathToFileURL(file).href)) as Record<string, unknown>
    for (const value of Object.values(exports)) {
      // error classes only (createError's), not the helpers beside them
      if (typeof value !== 'function' || !((value as { prototype?: unknown }).prototype instanceof Error)) continue
      const err = new (value as new () => unknown)()
      if (err instanceof Error && String((err as Rejection).code).startsWith('SLUICE_')) made.push(err)
    }
  }
  return made
}

describe('the proxy port answers', () => {
  it('each carry the outcome they are counted under', async () => {
    const errors = await sluiceErrors()
    expect(errors.length).toBeGreaterThan(40)
    const without = errors.filter((e) => !NOT_PROXY_ANSWERS.has(e.code!) && e.outcome === undefined).map((e) => e.code)
    expect(without).toEqual([])
  })

  it('the 503s carry the outcomes the metrics and alerts count them under (docs/observability.md)', async () => {
    const outcomes = new Map<string, Outcome | undefined>()
    for (const e of await sluiceErrors())
      if (e.statusCode === 503 && !NOT_PROXY_ANSWERS.has(e.code!)) outcomes.set(e.code!, e.outcome)
    expect(Object.fromEntries(outcomes)).toEqual({
      SLUICE_QUEUE_FULL: 'queue_full',
      SLUICE_QUEUE_TIMEOUT: 'queue_timeout',
      SLUICE_WAIT_TOO_LONG: 'wait_too_long',
      SLUICE_MEMORY_BUDGET: 'memory_budget',
      SLUICE_UPSTREAM_BUSY: 'upstream_busy',
      SLUICE_UNAVAILABLE: 'unavailable',
    })
  })
})
