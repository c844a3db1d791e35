import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { REDIS_OPERATIONS } from '../../../src/limiter/redis/index.js'

const REDIS_DIR = fileURLToPath(new URL('../../../src/limiter/redis/', import.meta.url))

/** Every script name defined under src/limiter/redis/<operation>/index.ts (`name: '…'` in a ScriptDef). */
function definedScriptNames(): string[] {
  const names: string[] = []
  for (const entry of readdirSync(REDIS_DIR, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue
    const source = readFileSync(`${REDIS_DIR}${entry.name}/index.ts`, 'utf8')
    for (const m of source.matchAll(/:\s*ScriptDef\s*=\s*\{\s*name:\s*'([^']+)'/g)) names.push(m[1]!)
  }
  return names
}

describe('REDIS_OPERATIONS', () => {
  it('lists every script the Redis backend runs, so each error counter exists at 0 from the start', () => {
    const defined = definedScriptNames()
    expect(defined.length).toBeGreaterThan(3)
    expect([...REDIS_OPERATIONS].sort()).toEqual([...defined].sort())
  })
})
