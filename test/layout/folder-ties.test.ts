import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * No two folders of src/ import each other (docs/development.md, "Layout"): what both sides need
 * lives where both can import it (src/errors/, each area's settings.ts composed by src/config/).
 */
const SRC = fileURLToPath(new URL('../../src', import.meta.url))

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : []
  })
}
/** the top folder of src/ a file is in ('' for src/*.ts) */
const folderOf = (path: string): string => {
  const parts = relative(SRC, path).split('/')
  return parts.length > 1 ? parts[0]! : ''
}

function folderImports(): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>()
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)) {
      const from = folderOf(file)
      const to = folderOf(resolve(dirname(file), m[1]!))
      if (from === to) continue
      if (!edges.has(from)) edges.set(from, new Set())
      edges.get(from)!.add(to)
    }
  }
  return edges
}

describe('src/ folders', () => {
  it('no two import each other', () => {
    const edges = folderImports()
    expect(edges.get('config')?.has('versioning')).toBe(true) // the scan sees imports at all
    const twoWay = [...edges].flatMap(([a, tos]) =>
      [...tos].filter((b) => a < b && edges.get(b)?.has(a)).map((b) => `${a || 'src'} <-> ${b || 'src'}`),
    )
    expect(twoWay).toEqual([])
  })
})
