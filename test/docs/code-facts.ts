import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { envBindings } from '../../src/config/env.js'
import { settingsSchema } from '../../src/config/schema.js'

/** What the docs tests hold the documents to: read from the code, never from a second list. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const readDoc = (rel: string): string => readFileSync(join(ROOT, rel), 'utf8')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** The text of every source file of src/, joined. */
export const sourceText = (): string =>
  sourceFiles(join(ROOT, 'src'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n')

/** Every code an answer of ours can carry, with its status: @fastify/error codes and the catalog's bad-path codes. */
export function answerCodes(): Map<string, number> {
  const codes = new Map<string, number>()
  for (const file of sourceFiles(join(ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8')
    // createError or refusal('SLUICE_…', 'message', status, …): the message may hold parentheses of its own
    for (const m of text.matchAll(/(?:createError|refusal)(?:<[^>]*>)?\(\s*'(SLUICE_[A-Z0-9_]+)',\s*(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`)\s*,\s*(\d{3})\b/gs)) {
      if (Number(m[2]) < 600) codes.set(m[1]!, Number(m[2]))
    }
  }
  for (const m of readFileSync(join(ROOT, 'src/catalog/types.ts'), 'utf8').matchAll(/'(SLUICE_BAD_PATH[A-Z_]*)'/g)) codes.set(m[1]!, 400)
  return codes
}

/** Every setting: its path `a.b`, its env var and its default (undefined when it has none). */
export function settings(): { path: string; env: string; value: unknown }[] {
  const defaults = settingsSchema.parse({}) as Record<string, unknown>
  const valueAt = (path: readonly string[]): unknown => path.reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], defaults)
  return envBindings(settingsSchema).map((b) => ({ path: b.path.join('.'), env: b.name, value: valueAt(b.path) }))
}

/** How a settings table shows a default: an unset one reads "unset", or names the file the code falls back to. */
export const shownDefaults = (value: unknown): string[] =>
  value === undefined ? ['unset', '`config/versions.yaml`'] : [`\`${typeof value === 'string' ? value || '""' : JSON.stringify(value)}\``]

/** The rows `| \`a.b\` | \`SLUICE_A_B\` | default | … |` of a settings table in `text`. */
export function settingRows(text: string): { path: string; env: string; shown: string }[] {
  return [...text.matchAll(/^\| `([A-Za-z0-9.]+)` \| `(SLUICE_[A-Z0-9_]+)` \| ([^|]*) \|/gm)].map((m) => ({ path: m[1]!, env: m[2]!, shown: m[3]!.trim() }))
}

/** A table of answers: `| 400 | \`SLUICE_…\` | when |` rows, code → status. */
export function answerRows(text: string): Map<string, number> {
  return new Map([...text.matchAll(/^\| (\d{3}) \| `(SLUICE_[A-Z0-9_]+)` \|/gm)].map((m) => [m[2]!, Number(m[1])]))
}
