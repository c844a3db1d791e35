import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml } from 'yaml'

/** Paths and readers shared by the deploy tests: the chart is read as text, nothing here needs helm. */

export const REPO = fileURLToPath(new URL('../../', import.meta.url))
export const CHART_DIR = join(REPO, 'helm/sluice')
export const TEMPLATES_DIR = join(CHART_DIR, 'templates')
export const EXAMPLES_DIR = join(CHART_DIR, 'examples')

export type Tree = Record<string, unknown>
export const isTree = (v: unknown): v is Tree => typeof v === 'object' && v !== null && !Array.isArray(v)

export const readText = (path: string): string => readFileSync(path, 'utf8')
export const readYamlFile = (path: string): unknown => parseYaml(readText(path))

export const chartValues = (): Tree => readYamlFile(join(CHART_DIR, 'values.yaml')) as Tree

/** Every file under `dir`, relative to it, sorted. */
export function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort()
}

/** The chart's templates by file name (partials `_*.tpl`, manifests, NOTES.txt). */
export function templates(): Map<string, string> {
  return new Map(listFiles(TEMPLATES_DIR).map((name) => [name, readText(join(TEMPLATES_DIR, name))]))
}

export const exampleValueFiles = (): string[] =>
  listFiles(EXAMPLES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(EXAMPLES_DIR, f))

/**
 * The actions of a Go template (`{{ … }}` bodies, trim markers stripped); run stripComments first.
 * Quoted strings are honoured, so `{{ "}}" }}` is one action.
 */
export function templateActions(text: string): string[] {
  const actions: string[] = []
  let i = 0
  for (;;) {
    const open = text.indexOf('{{', i)
    if (open < 0) return actions
    let j = open + 2
    let quote: string | undefined
    for (; j < text.length; j++) {
      const c = text[j]!
      if (quote) {
        if (c === '\\' && quote === '"') j++
        else if (c === quote) quote = undefined
      } else if (c === '"' || c === '`' || c === "'") quote = c
      else if (c === '}' && text[j + 1] === '}') break
    }
    if (j >= text.length) throw new Error(`unclosed action at offset ${open}`)
    const body = text
      .slice(open + 2, j)
      .replace(/^-\s/, '')
      .replace(/\s-$/, '')
      .trim()
    actions.push(body)
    i = j + 2
  }
}

/** Removes `{{/* … *\/}}` comments (which may contain `{{ … }}` examples) before lexing. */
export const stripComments = (text: string): string => text.replace(/\{\{-?\s*\/\*[\s\S]*?\*\/\s*-?\}\}/g, '')

/** The value at `path` in `tree`, or undefined when a step is missing. */
export function at(tree: unknown, path: readonly string[]): unknown {
  let node = tree
  for (const key of path) {
    if (!isTree(node) || !(key in node)) return undefined
    node = node[key]
  }
  return node
}
