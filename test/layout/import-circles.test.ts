import { describe, expect, it } from 'vitest'
import { fileImports, importCircles } from './imports.js'

/**
 * No two files of src/ import each other, however far round: a circle, even of types alone, means
 * neither file can be read, tested or moved without the other (docs/development.md, "Rules the
 * layout tests enforce").
 */

describe('src/ files', () => {
  it('see every import, type-only ones included', () => {
    const imports = fileImports()
    expect(imports.length).toBeGreaterThan(500)
    // `import type` and inline `type` specifiers are read as type-only ties
    expect(imports).toContainEqual({ from: 'src/log/access-log.ts', to: 'src/record/record.ts', typeOnly: true })
    expect(imports).toContainEqual({ from: 'src/proxy/plugin.ts', to: 'src/proxy/handler.ts', typeOnly: false })
  })

  it('finds a circle of type-only imports', () => {
    const circle = importCircles([
      { from: 'src/a/x.ts', to: 'src/a/y.ts', typeOnly: true },
      { from: 'src/a/y.ts', to: 'src/a/z.ts', typeOnly: false },
      { from: 'src/a/z.ts', to: 'src/a/x.ts', typeOnly: true },
      { from: 'src/a/z.ts', to: 'src/b/w.ts', typeOnly: false },
    ])
    expect(circle).toEqual([['src/a/x.ts', 'src/a/y.ts', 'src/a/z.ts']])
  })

  it('import each other in no circle', () => {
    expect(importCircles(fileImports())).toEqual([])
  })
})
