import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { has, TOOLS, type ToolName } from '../support/tools.js'

/**
 * The end of a test run names what it skipped, by the tool each test needs, and what brings it; with
 * SLUICE_TEST_REQUIRE_TOOLS=1 (.ci/run) a skip fails the run unless CI accepts its tool as not available
 * here (docs/development.md, "Tools some tests need"). Runs vitest on fixture tests with the real reporter.
 */
const REPO = fileURLToPath(new URL('../..', import.meta.url))
const VITEST = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url))
const CONFIG = fileURLToPath(new URL('./skip-summary-fixture/vitest.config.ts', import.meta.url))

function runFixture(env: Record<string, string>): { status: number | null; summary: string[] } {
  const run = spawnSync(process.execPath, [VITEST, 'run', '--config', CONFIG], {
    cwd: REPO,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NO_COLOR: '1', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  })
  const out = run.stdout + run.stderr
  const start = out.indexOf(' Skipped tests, by what they need:')
  return { status: run.status, summary: start < 0 ? [] : out.slice(start).trimEnd().split('\n') }
}

describe('the summary of skipped tests', () => {
  it('groups the skips by tool, names the command that brings them, and lists the skips no tool explains', () => {
    const { status, summary } = runFixture({})
    expect(status).toBe(0)
    // The fixture skips its tests itself: a tool that is here is said to be, one that is missing gets its command.
    const note = (tool: ToolName): string =>
      has(tool) ? '— here, yet skipped: see the condition in the test' : `— ${TOOLS[tool].brings}`
    const anyMissing = !has('chromium') || !has('promtool')
    expect(summary).toEqual([
      ' Skipped tests, by what they need:',
      `   chromium: 2 tests in needs-tools.fixture.ts ${note('chromium')}`,
      `   promtool: 1 test in needs-tools.fixture.ts ${note('promtool')}`,
      '   no tool named: needs-tools.fixture.ts: skipped with no tool named',
      ...(anyMissing
        ? [' To run them: sudo scripts/install-test-tools.sh (docs/development.md, "Tools some tests need")']
        : []),
    ])
  }, 150_000)

  it('with SLUICE_TEST_REQUIRE_TOOLS=1 a skip CI should have run fails the run', () => {
    const { status, summary } = runFixture({ SLUICE_TEST_REQUIRE_TOOLS: '1' })
    expect(status).toBe(1)
    expect(summary.at(-1)).toBe(' SLUICE_TEST_REQUIRE_TOOLS=1: 4 skipped tests that CI must run: failing the run.')
  }, 150_000)

  it('with SLUICE_TEST_REQUIRE_TOOLS=1, helm and a container builder are accepted as not available here', () => {
    const { status, summary } = runFixture({ SLUICE_TEST_REQUIRE_TOOLS: '1', SKIP_FIXTURE: 'not-here' })
    // Where one of them is here, its skip is one CI should have run.
    const line = (tool: 'helm' | 'container builder'): string =>
      `   ${tool}: 1 test in not-here.fixture.ts ${has(tool) ? '— here, yet skipped: see the condition in the test' : `— not available here (CI accepts it); brings it: ${TOOLS[tool].brings}`}`
    const here = [has('container builder'), has('helm')].filter(Boolean).length
    expect(summary).toEqual([
      ' Skipped tests, by what they need:',
      line('container builder'),
      line('helm'),
      ...(here > 0
        ? [
            ` SLUICE_TEST_REQUIRE_TOOLS=1: ${here} skipped test${here === 1 ? '' : 's'} that CI must run: failing the run.`,
          ]
        : []),
    ])
    expect(status).toBe(here > 0 ? 1 : 0)
  }, 150_000)
})
