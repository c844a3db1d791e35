import { execFileSync } from 'node:child_process'
import { readFileSync, realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The labels of sluice_build_info. */
export interface BuildInfo {
  readonly version: string
  readonly revision: string
  readonly node: string
}

// The package root, from src/metrics/ and from dist/metrics/ alike.
const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The file the image's build writes the commit into (Dockerfile, build stage: --build-arg REVISION); no git in the image. */
export const REVISION_FILE = 'dist/revision'

/**
 * Which sluice this is: package.json's version, the git commit (from sluice's own clone, else the
 * image's REVISION_FILE, else `unknown`), Node.js's version. `root`: the package root.
 */
export function readBuildInfo(root: string = ROOT): BuildInfo {
  return {
    version: packageVersion(root),
    revision: gitRevision(root) ?? fileRevision(root),
    node: process.versions.node,
  }
}

function fileRevision(root: string): string {
  try {
    const text = readFileSync(`${root}${REVISION_FILE}`, 'utf8').trim()
    return /^[0-9a-f]{7,40}$/.test(text) ? text.slice(0, 12) : 'unknown'
  } catch {
    return 'unknown'
  }
}

function packageVersion(root: string): string {
  try {
    const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { version?: unknown }
    return typeof pkg.version === 'string' ? pkg.version : 'unknown'
  } catch {
    return 'unknown'
  }
}

function gitRevision(root: string): string | undefined {
  try {
    const [top, head] = execFileSync('git', ['rev-parse', '--show-toplevel', '--short=12', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 2000,
    }).split('\n')
    // Only sluice's own clone: not a project that has sluice somewhere inside its tree.
    if (top === undefined || realpathSync(top) !== realpathSync(root)) return undefined
    return head !== undefined && /^[0-9a-f]{7,40}$/.test(head) ? head : undefined
  } catch {
    return undefined
  }
}
