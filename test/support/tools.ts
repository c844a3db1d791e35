import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The programs some tests drive, each with how to tell it is here and what brings it. A test that
 * needs one skips without it and carries `needs(tool)` in its title, so that the summary at the end
 * of `npm test` (test/support/skip-summary.ts) names what was skipped and why (docs/development.md,
 * "Tests, lint and CI"). `scripts/install-test-tools.sh` brings every tool CI installs.
 */

/** What `.ci/run` does about a missing tool: `install` it (and fail when its tests still skip), or accept it as `notHere`. */
export type CiPolicy = 'install' | 'notHere'

export interface Tool {
  readonly available: () => boolean
  /** what brings it, for the summary */
  readonly brings: string
  readonly ci: CiPolicy
}

const onPath = (bin: string): boolean => spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' }).status === 0
const answers = (bin: string, ...args: string[]): boolean =>
  spawnSync(bin, args, { stdio: 'ignore', timeout: 20_000 }).status === 0

export const CHROMIUM = '/usr/bin/chromium'
const GOPATH = '/usr/share/gocode'
const GO_LIBRARIES = ['src/github.com/Masterminds/sprig', 'src/sigs.k8s.io/yaml', 'src/github.com/xeipuuv/gojsonschema']
const INSTALL = 'sudo scripts/install-test-tools.sh'

export const TOOLS = {
  /** Debian's Chromium: the status page in a real browser (playwright-core drives it) */
  chromium: { available: () => existsSync(CHROMIUM), brings: INSTALL, ci: 'install' },
  /** promtool: the alerting rules and `promtool check metrics` (Debian's `prometheus` package) */
  promtool: { available: () => answers('promtool', '--version'), brings: INSTALL, ci: 'install' },
  /** a real Prometheus scraping sluice for the dashboard's queries (the same package) */
  prometheus: { available: () => answers('prometheus', '--version'), brings: INSTALL, ci: 'install' },
  /** Go with sprig, sigs.k8s.io/yaml and gojsonschema from Debian: the chart rendered as Helm does */
  'go + sprig': {
    available: () => onPath('go') && GO_LIBRARIES.every((lib) => existsSync(join(GOPATH, lib))),
    brings: INSTALL,
    ci: 'install',
  },
  /** redis-server (and redis-cli) of our own: the tests that stop, freeze or restart Redis, Cluster and Sentinel */
  'redis-server': {
    available: () => answers('redis-server', '--version') && answers('redis-cli', '--version'),
    brings: INSTALL,
    ci: 'install',
  },
  openssl: { available: () => answers('openssl', 'version'), brings: INSTALL, ci: 'install' },
  /** the helm binary itself (not in Debian): `helm lint` and `helm template` of the chart */
  helm: { available: () => onPath('helm'), brings: 'helm from https://helm.sh/docs/intro/install/', ci: 'notHere' },
  /** docker, podman or buildah that can build and run the image (and reach its base image) */
  'container builder': {
    // one that answers, as test/deploy/image-build.test.ts asks (a docker client without a daemon is none)
    available: () =>
      answers('docker', 'version', '--format', '{{.Server.Version}}') ||
      answers('podman', 'info', '--format', '{{.Host.Arch}}') ||
      answers('buildah', 'info'),
    brings: 'docker, podman or buildah',
    ci: 'notHere',
  },
} as const satisfies Record<string, Tool>

export type ToolName = keyof typeof TOOLS

const checked = new Map<ToolName, boolean>()

/** Whether the tool is here (asked once per process). */
export function has(tool: ToolName): boolean {
  let found = checked.get(tool)
  if (found === undefined) checked.set(tool, (found = TOOLS[tool].available()))
  return found
}

/** A test title's mark of the tools it needs, e.g. `[needs chromium]`; the summary reads it. */
export const needs = (...tools: ToolName[]): string => `[needs ${tools.join(', ')}]`

/** The tools a test title names (`[needs a, b]`), in order. */
export function toolsNamed(title: string): ToolName[] {
  const found: ToolName[] = []
  for (const match of title.matchAll(/\[needs ([^\]]+)\]/g)) {
    for (const name of match[1]!.split(', ')) if (name in TOOLS) found.push(name as ToolName)
  }
  return found
}
