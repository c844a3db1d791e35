import { relative } from 'node:path'
import type { Reporter, TestModule } from 'vitest/node'
import { has, TOOLS, toolsNamed, type ToolName } from './tools.js'

/**
 * A vitest reporter, after the default one: at the end of the run, the skipped tests grouped by the
 * tool they need (their `[needs …]` title mark, test/support/tools.ts) and what brings each; the
 * skips no tool explains, by file. With SLUICE_TEST_REQUIRE_TOOLS=1 (set by `.ci/run`) a skip is a
 * failure, unless its tool is one CI accepts as not available here (`ci: 'notHere'`: helm, a
 * container builder) — docs/development.md, "Tests, lint and CI".
 */

/** The group a skipped test falls in: the first tool its title names that is missing, else all it names (each here). */
function groupOf(title: string): { group: string; missing: boolean } | undefined {
  const tools = toolsNamed(title)
  if (tools.length === 0) return undefined
  const missing = tools.find((t) => !has(t))
  return missing === undefined ? { group: tools.join(', '), missing: false } : { group: missing, missing: true }
}

export default class SkipSummary implements Reporter {
  private root = process.cwd()

  onInit(vitest: { config: { root: string } }): void {
    this.root = vitest.config.root
  }

  async onTestRunEnd(modules: ReadonlyArray<TestModule>): Promise<void> {
    // After the default reporter's own summary, which it writes in the same turn.
    await new Promise((resolve) => setImmediate(resolve))
    const byTool = new Map<string, { tests: number; files: Set<string>; missing: boolean }>()
    const unexplained = new Map<string, string[]>()
    for (const module of modules) {
      const file = relative(this.root, module.moduleId)
      for (const test of module.children.allTests()) {
        if (test.result().state !== 'skipped') continue
        const found = groupOf(test.fullName)
        if (found === undefined) {
          unexplained.set(file, [...(unexplained.get(file) ?? []), test.fullName])
          continue
        }
        const entry = byTool.get(found.group) ?? { tests: 0, files: new Set<string>(), missing: found.missing }
        entry.tests++
        entry.files.add(file)
        byTool.set(found.group, entry)
      }
    }
    if (byTool.size === 0 && unexplained.size === 0) return
    const required = process.env.SLUICE_TEST_REQUIRE_TOOLS === '1'
    const out: string[] = ['', ' Skipped tests, by what they need:']
    let failing = 0
    const commands = new Set<string>()
    for (const [group, { tests, files, missing }] of [...byTool].sort(([a], [b]) => a.localeCompare(b))) {
      const tool = missing ? TOOLS[group as ToolName] : undefined
      const accepted = tool?.ci === 'notHere'
      if (!accepted) failing += tests
      if (tool !== undefined) commands.add(tool.brings)
      const note =
        tool === undefined
          ? '— here, yet skipped: see the condition in the test'
          : accepted
            ? `— not available here (CI accepts it); brings it: ${tool.brings}`
            : `— ${tool.brings}`
      out.push(`   ${group}: ${tests} test${tests === 1 ? '' : 's'} in ${[...files].sort().join(', ')} ${note}`)
    }
    for (const [file, titles] of [...unexplained].sort(([a], [b]) => a.localeCompare(b))) {
      failing += titles.length
      out.push(`   no tool named: ${file}: ${titles.join('; ')}`)
    }
    const install = [...commands].filter((c) => c.startsWith('sudo '))
    if (install.length > 0)
      out.push(` To run them: ${install.join('; ')} (docs/development.md, "Tools some tests need")`)
    if (required && failing > 0) {
      out.push(
        ` SLUICE_TEST_REQUIRE_TOOLS=1: ${failing} skipped test${failing === 1 ? '' : 's'} that CI must run: failing the run.`,
      )
      process.exitCode = 1
    }
    process.stdout.write(out.join('\n') + '\n')
  }
}
