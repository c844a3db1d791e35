import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { areaOf, fileImports, SRC } from './imports.js'

/**
 * Every import between two folders of src/ goes down the layers docs/development.md lists ("Rules
 * the layout tests enforce"): read from that table, so the page and the code cannot disagree.
 */
const DEVELOPMENT = fileURLToPath(new URL('../../docs/development.md', import.meta.url))

/** The layer of each folder, from the table's rows `| 3 | \`budget\`, \`catalog\` |`. */
function layers(): Map<string, number> {
  const text = readFileSync(DEVELOPMENT, 'utf8')
  const rows = [...text.matchAll(/^ *\| (\d+) \| (`[a-z-]+`(?:, `[a-z-]+`)*)(?: \([^|]*\))? \|/gm)]
  return new Map(rows.flatMap((row) => [...row[2]!.matchAll(/`([a-z-]+)`/g)].map((m) => [m[1]!, Number(row[1])])))
}

describe('src/ folders', () => {
  it('each have a layer in docs/development.md', () => {
    const folders = readdirSync(SRC).filter((name) => statSync(join(SRC, name)).isDirectory())
    const known = layers()
    expect(known.get('src')).toBeGreaterThan(known.get('proxy')!) // the table is read at all
    expect(folders.filter((f) => !known.has(f))).toEqual([])
  })

  it('import only folders of lower layers, type-only imports included', () => {
    const layer = layers()
    const upward = fileImports()
      .filter(({ from, to }) => areaOf(from) !== areaOf(to))
      .filter(({ from, to }) => (layer.get(areaOf(to)) ?? Infinity) >= (layer.get(areaOf(from)) ?? -Infinity))
      .map(({ from, to, typeOnly }) => `${from} -> ${to}${typeOnly ? ' (types)' : ''}`)
    expect(upward).toEqual([])
  })
})
