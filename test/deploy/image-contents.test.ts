import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO } from './chart.js'
import { readDockerfile } from './dockerfile.js'

/** What the image ships: the runtime dependencies src/ needs and nothing else, without the sim and the demo. */

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : []
  })
}
const SRC = join(REPO, 'src')
const files = sourceFiles(SRC).map((path) => ({ rel: relative(SRC, path), text: readFileSync(path, 'utf8') }))
const importsOf = (text: string): string[] =>
  [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm), ...text.matchAll(/import\('([^']+)'\)/g)].map(
    (m) => m[1]!,
  )
const packageOf = (spec: string): string =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!
const isToolOnly = (rel: string): boolean => rel.startsWith('sim/') || rel.startsWith('demo/')

describe('what the image holds', () => {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }

  it('runtime dependencies are exactly the packages src/ imports (the benchmark baseline and test tools are dev dependencies)', () => {
    const used = new Set(
      files
        .filter((f) => !isToolOnly(f.rel))
        .flatMap((f) => importsOf(f.text))
        .filter((spec) => !spec.startsWith('.') && !spec.startsWith('node:'))
        .map(packageOf),
    )
    expect(used.size).toBeGreaterThan(5)
    expect(Object.keys(pkg.dependencies).sort()).toEqual([...used].sort())
    // the sim and the demo get by with the same packages
    const toolPackages = files
      .filter((f) => isToolOnly(f.rel))
      .flatMap((f) => importsOf(f.text))
      .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
    expect(toolPackages.map(packageOf).filter((p) => !(p in pkg.dependencies))).toEqual([])
  })

  it('the build stage drops dist/sim and dist/demo, and nothing else in src/ imports them', () => {
    const { stages } = readDockerfile()
    const build = stages.find((s) => s.instructions.some((i) => i.op === 'RUN' && /\bnpm run build\b/.test(i.args)))
    expect(build).toBeDefined()
    const runs = build!.instructions
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join('\n')
    expect(runs).toMatch(/rm -rf[^\n]*\bdist\/sim\b/)
    expect(runs).toMatch(/rm -rf[^\n]*\bdist\/demo\b/)
    const offenders = files.filter(
      (f) => !isToolOnly(f.rel) && importsOf(f.text).some((spec) => /(^|\/)(sim|demo)\//.test(spec)),
    )
    expect(offenders.map((f) => f.rel)).toEqual([])
  })
})
