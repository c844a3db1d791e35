import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { envBindings } from '../../src/config/env.js'
import { loadSettings } from '../../src/config/load.js'
import { settingsSchema } from '../../src/config/schema.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const README = readFileSync(join(ROOT, 'README.md'), 'utf8')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** Every code an answer of ours can carry: @fastify/error codes and the catalog's bad-path codes. */
function answerCodes(): string[] {
  const codes = new Set<string>()
  for (const file of sourceFiles(join(ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/createError(?:<[^>]*>)?\(\s*'(SLUICE_[A-Z0-9_]+)'[^)]*?(\d{3})\s*,?\s*\)/gs)) {
      if (Number(m[2]) < 600) codes.add(m[1]!)
    }
  }
  for (const m of readFileSync(join(ROOT, 'src/catalog/types.ts'), 'utf8').matchAll(/'(SLUICE_BAD_PATH[A-Z_]*)'/g)) codes.add(m[1]!)
  return [...codes].sort()
}

describe('README.md says what the code does', () => {
  it('lists every setting with its env var and its default', () => {
    const defaults = settingsSchema.parse({}) as Record<string, unknown>
    const valueAt = (path: readonly string[]): unknown => path.reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], defaults)
    const missing: string[] = []
    for (const b of envBindings(settingsSchema)) {
      const row = README.split('\n').find((l) => l.startsWith(`| \`${b.path.join('.')}\` | \`${b.name}\` |`))
      if (row === undefined) {
        missing.push(b.name)
        continue
      }
      const value = valueAt(b.path)
      const shown = row.split('|')[3]!.trim()
      // An unset default reads "unset", or names the file the code falls back to.
      const expected = value === undefined ? ['unset', '`config/versions.yaml`'] : [`\`${typeof value === 'string' ? value || '""' : JSON.stringify(value)}\``]
      if (!expected.includes(shown)) missing.push(`${b.name}: README says ${shown}, the code ${JSON.stringify(value)}`)
    }
    expect(missing).toEqual([])
  })

  it('documents every error code the proxy can answer with', () => {
    const codes = answerCodes()
    expect(codes.length).toBeGreaterThan(15)
    expect(codes.filter((c) => !README.includes(`\`${c}\``))).toEqual([])
  })

  it('links only to files that exist', () => {
    const links = [...README.matchAll(/\]\(((?!https?:|#)[^)]+)\)/g)].map((m) => m[1]!)
    expect(links.length).toBeGreaterThan(5)
    // a link into a file (`docs/x.md#part`) needs the file
    expect(links.filter((l) => !existsSync(join(ROOT, l.replace(/#.*$/, ''))))).toEqual([])
  })

  it('the example settings file loads', () => {
    expect(() => loadSettings({ SLUICE_CONFIG: join(ROOT, 'config/sluice.example.yaml') })).not.toThrow()
  })
})
