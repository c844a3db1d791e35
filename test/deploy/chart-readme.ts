import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CHART_DIR, chartValues, isTree, readText, type Tree } from './chart.js'
import { nodeAt, valuesSchema, type SchemaNode } from './schema.js'

/**
 * The values table of helm/sluice/README.md, generated from values.schema.json (types,
 * descriptions) and values.yaml (defaults). chart-readme.test.ts checks that the README holds
 * exactly this table; `npm run chart:readme` rewrites it.
 */

export const README = join(CHART_DIR, 'README.md')
export const BEGIN =
  '<!-- values: generated from values.schema.json and values.yaml by `npm run chart:readme`; do not edit by hand -->'
export const END = '<!-- end of values -->'

/** Every key of values.yaml, in file order, descending into non-empty maps (not into `settings`, sluice's own). */
export function valuePaths(tree: Tree = chartValues(), prefix: string[] = []): string[][] {
  return Object.entries(tree).flatMap(([k, v]) => [
    [...prefix, k],
    ...(isTree(v) && Object.keys(v).length > 0 && k !== 'settings' ? valuePaths(v, [...prefix, k]) : []),
  ])
}

function typeOf(node: SchemaNode): string {
  if (node.enum) return node.enum.map((e) => JSON.stringify(e)).join(' \\| ')
  if (node.oneOf)
    return node.description?.startsWith('A Kubernetes quantity') ? 'quantity' : node.oneOf.map(typeOf).join(' \\| ')
  const types = [node.type ?? 'any'].flat()
  if (types.includes('array') && node.items) {
    const items = resolveDescription(node.items)
    return `list of ${items ?? [node.items.type ?? 'object'].flat().join('|')}`
  }
  return types.join(' \\| ')
}

/** The name of a list item's definition (`#/definitions/envVar` → EnvVar), for the type column. */
function resolveDescription(items: SchemaNode): string | undefined {
  const ref = items.$ref?.split('/').pop()
  return ref ? ref.charAt(0).toUpperCase() + ref.slice(1) : undefined
}

const cell = (text: string): string =>
  text.replace(/\|/g, '\\|').replace(/\n/g, ' ').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const formatDefault = (value: unknown): string =>
  isTree(value) && Object.keys(value).length > 0 ? '' : `\`${cell(JSON.stringify(value))}\``

export function valuesTable(): string {
  const schema = valuesSchema()
  const values = chartValues()
  const rows = valuePaths(values).map((path) => {
    const node = nodeAt(schema, path)
    if (!node) throw new Error(`values.schema.json has no node for ${path.join('.')}`)
    const value = path.reduce<unknown>((n, k) => (n as Tree)[k], values)
    const description = node.description ?? `Kubernetes' \`${path.at(-1)!}\` of \`${path.slice(0, -1).join('.')}\`.`
    return `| \`${path.join('.')}\` | ${typeOf(node)} | ${formatDefault(value)} | ${cell(description)} |`
  })
  return ['| Key | Type | Default | Description |', '|---|---|---|---|', ...rows].join('\n')
}

/** The README with its values section replaced by the generated table. */
export function regenerated(readme = readText(README)): string {
  const begin = readme.indexOf(BEGIN)
  const end = readme.indexOf(END)
  if (begin < 0 || end < begin) throw new Error(`${README} lacks the markers ${BEGIN} … ${END}`)
  return `${readme.slice(0, begin + BEGIN.length)}\n\n${valuesTable()}\n\n${readme.slice(end)}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(README, regenerated())
  console.log(`wrote the values table of ${README}`)
}
