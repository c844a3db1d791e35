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

/** Every code an answer of ours can carry, with its status: @fastify/error codes and the catalog's bad-path codes. */
function answerCodes(): Map<string, number> {
  const codes = new Map<string, number>()
  for (const file of sourceFiles(join(ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8')
    // createError('SLUICE_…', 'message', status): the message may hold parentheses of its own
    for (const m of text.matchAll(/createError(?:<[^>]*>)?\(\s*'(SLUICE_[A-Z0-9_]+)',\s*(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`)\s*,\s*(\d{3})\b/gs)) {
      if (Number(m[2]) < 600) codes.set(m[1]!, Number(m[2]))
    }
  }
  for (const m of readFileSync(join(ROOT, 'src/catalog/types.ts'), 'utf8').matchAll(/'(SLUICE_BAD_PATH[A-Z_]*)'/g)) codes.set(m[1]!, 400)
  return codes
}

/** The README's table of answers: `| 400 | \`SLUICE_…\` | when |` rows, code → status. */
function readmeAnswerRows(): Map<string, number> {
  return new Map([...README.matchAll(/^\| (\d{3}) \| `(SLUICE_[A-Z0-9_]+)` \|/gm)].map((m) => [m[2]!, Number(m[1])]))
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
    const codes = [...answerCodes().keys()].sort()
    expect(codes.length).toBeGreaterThan(15)
    expect(codes.filter((c) => !README.includes(`\`${c}\``))).toEqual([])
  })

  it('the table of answers gives each code the status the code answers with', () => {
    const rows = readmeAnswerRows()
    expect(rows.size).toBeGreaterThan(15)
    const disagree = [...answerCodes()]
      .filter(([code, status]) => rows.has(code) && rows.get(code) !== status)
      .map(([code, status]) => `${code}: README ${rows.get(code)}, code ${status}`)
    expect(disagree).toEqual([])
    // and every row is a code the source answers with (fallbacks such as SLUICE_INTERNAL are plain strings)
    const source = sourceFiles(join(ROOT, 'src')).map((f) => readFileSync(f, 'utf8')).join('\n')
    expect([...rows.keys()].filter((c) => !source.includes(`'${c}'`))).toEqual([])
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
