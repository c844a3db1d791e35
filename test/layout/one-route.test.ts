import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { SRC } from './imports.js'

/**
 * The CRM is one route among others (docs/development.md, "A request's way through the code"): the
 * handler takes a route, and what it shares between routes has no optional part that only one
 * upstream fills, nor anything named after the CRM.
 */
const parse = (file: string): ts.SourceFile =>
  ts.createSourceFile(file, readFileSync(join(SRC, file), 'utf8'), ts.ScriptTarget.Latest, true)

/** The members of an interface declared in `file`: name, and whether it is optional. */
function membersOf(file: string, name: string): { name: string; optional: boolean }[] {
  const found = parse(file).statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name,
  )
  if (found === undefined) throw new Error(`no interface ${name} in src/${file}`)
  return found.members.map((m) => ({ name: m.name?.getText() ?? '', optional: m.questionToken !== undefined }))
}

/** Every identifier of the files of src/proxy/ and src/app.ts. */
function identifiers(): Set<string> {
  const files = [...readdirSync(join(SRC, 'proxy')).map((f) => `proxy/${f}`), 'app.ts']
  const names = new Set<string>()
  for (const file of files) {
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node)) names.add(node.text)
      ts.forEachChild(node, visit)
    }
    visit(parse(file))
  }
  return names
}

describe('the proxy handler', () => {
  it('shares nothing optional between routes, and nothing a route has', () => {
    const shared = membersOf('proxy/handler.ts', 'ProxyContext')
    const route = [...membersOf('proxy/routes.ts', 'UpstreamRoute'), ...membersOf('proxy/routes.ts', 'RouteBase')]
    expect(route.map((m) => m.name)).toContain('catalog') // the scan reads the route at all
    expect(shared.filter((m) => m.optional).map((m) => m.name)).toEqual([])
    expect(shared.filter((m) => route.some((r) => r.name === m.name)).map((m) => m.name)).toEqual([])
  })

  it('takes its route as a parameter', () => {
    const handler = parse('proxy/handler.ts').statements.find(
      (s): s is ts.FunctionDeclaration => ts.isFunctionDeclaration(s) && s.name?.text === 'createProxyHandler',
    )
    expect(handler?.parameters.map((p) => p.type?.getText())).toEqual(['ProxyContext', 'UpstreamRoute'])
  })

  it('names no upstream of its own in src/proxy/ or the composition root', () => {
    expect([...identifiers()].filter((n) => /^crm$|^crm[A-Z]|upstreamName/.test(n))).toEqual([])
  })

  it("asks the route's one throttle rule whether an answer is a throttle (src/upstreams/throttle.ts)", () => {
    const names = identifiers()
    expect(names.has('throttled')).toBe(true)
    expect([...names].filter((n) => n === 'RETRY_STATUSES' || n === 'retryWithRetryAfter')).toEqual([])
  })
})
