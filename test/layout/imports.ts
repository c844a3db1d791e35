import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/**
 * The import graph of src/ file by file, read with the TypeScript compiler's parser (not regexes), so
 * that `import type`, `export … from` and `import('…')` types count like any other import: a
 * type-only tie blurs the layers as much as a runtime one (docs/development.md, "Rules the layout
 * tests enforce").
 */
export const SRC = fileURLToPath(new URL('../../src', import.meta.url))

/** One import between two files of src/, both as `src/…` paths. */
export interface FileImport {
  readonly from: string
  readonly to: string
  /** nothing of it is left after compiling (`import type`, an `import('…')` type) */
  readonly typeOnly: boolean
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : []
  })
}

const named = (path: string): string => `src/${relative(SRC, path)}`

/** The module specifiers a file names, with whether each tie is for types alone. */
function specifiersOf(file: string): { specifier: string; typeOnly: boolean }[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false)
  const found: { specifier: string; typeOnly: boolean }[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)))
      found.push({ specifier: node.moduleSpecifier.text, typeOnly })
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly })
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const literal = node.argument.literal
      if (ts.isStringLiteral(literal)) found.push({ specifier: literal.text, typeOnly: true })
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

let scanned: readonly FileImport[] | undefined

/** Every import from one file of src/ to another (packages and node: modules left out); read once per test file. */
export function fileImports(): readonly FileImport[] {
  return (scanned ??= scan())
}

function scan(): FileImport[] {
  return sourceFiles(SRC).flatMap((file) =>
    specifiersOf(file)
      .filter((s) => s.specifier.startsWith('.'))
      .map((s) => ({
        from: named(file),
        // ESM names the compiled `.js`; the source is the `.ts` beside it
        to: named(resolve(dirname(file), s.specifier.replace(/\.js$/, '.ts'))),
        typeOnly: s.typeOnly,
      })),
  )
}

/** The import circles: each strongly connected group of two or more files (or a file importing itself), sorted. */
export function importCircles(imports: readonly FileImport[]): string[][] {
  const next = new Map<string, string[]>()
  for (const { from, to } of imports) next.set(from, [...(next.get(from) ?? []), to])
  // Tarjan's algorithm (recursive: src/'s imports are a few files deep)
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const circles: string[][] = []
  const connect = (v: string): void => {
    index.set(v, counter)
    low.set(v, counter++)
    stack.push(v)
    onStack.add(v)
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const group: string[] = []
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w)
      group.push(w)
      if (w === v) break
    }
    if (group.length > 1 || (next.get(v) ?? []).includes(v)) circles.push(group.sort())
  }
  for (const v of next.keys()) if (!index.has(v)) connect(v)
  return circles.sort((a, b) => a[0]!.localeCompare(b[0]!))
}

/** The top folder of src/ a file is in: `src` for src/*.ts, else its first folder (src/limiter/redis/x.ts → `limiter`). */
export const areaOf = (file: string): string => {
  const parts = file.split('/')
  return parts.length > 2 ? parts[1]! : 'src'
}
