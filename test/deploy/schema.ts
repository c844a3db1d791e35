import { join } from 'node:path'
import { CHART_DIR, isTree, readText, type Tree } from './chart.js'

/** values.schema.json read as data: its nodes by value path, $refs followed (draft-07, local refs only). */

export interface SchemaNode {
  type?: string | string[]
  description?: string
  properties?: Record<string, SchemaNode>
  additionalProperties?: boolean | SchemaNode
  items?: SchemaNode
  required?: string[]
  enum?: unknown[]
  oneOf?: SchemaNode[]
  $ref?: string
  [key: string]: unknown
}

export const valuesSchema = (): SchemaNode => JSON.parse(readText(join(CHART_DIR, 'values.schema.json'))) as SchemaNode

/** The node a local `$ref` points at (descriptions beside the ref win, as the README shows them). */
export function resolve(root: SchemaNode, node: SchemaNode): SchemaNode {
  if (!node.$ref) return node
  const target = node.$ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((n, key) => (isTree(n) ? n[key] : undefined), root)
  if (!isTree(target)) throw new Error(`unresolved $ref ${node.$ref}`)
  const { $ref: _ref, ...beside } = node
  return { ...(resolve(root, target) as Tree), ...beside }
}

/** The schema node of a value path (['image', 'tag']), or undefined when the schema has none. */
export function nodeAt(root: SchemaNode, path: readonly string[]): SchemaNode | undefined {
  let node: SchemaNode | undefined = root
  for (const key of path) {
    if (!node) return undefined
    const resolved: SchemaNode = resolve(root, node)
    const next: SchemaNode | boolean | undefined =
      resolved.properties?.[key] ?? (isTree(resolved.additionalProperties) ? resolved.additionalProperties : undefined)
    node = isTree(next) ? next : undefined
  }
  return node ? resolve(root, node) : undefined
}

/** Every object node of the schema with its JSON pointer, for checks over the whole file. */
export function objectNodes(node: unknown, pointer = '#'): { pointer: string; node: SchemaNode }[] {
  if (!isTree(node)) return []
  const here = node.type === 'object' || node.properties !== undefined ? [{ pointer, node: node as SchemaNode }] : []
  return [
    ...here,
    ...Object.entries(node).flatMap(([k, v]) =>
      Array.isArray(v)
        ? v.flatMap((item, i) => objectNodes(item, `${pointer}/${k}/${i}`))
        : objectNodes(v, `${pointer}/${k}`),
    ),
  ]
}
