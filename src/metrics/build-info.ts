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

/** Which sluice this is: package.json's version, the git commit (`unknown` without a clone, as in the image), Node.js's version. */
export function readBuildInfo(): BuildInfo {
  return { version: packageVersion(), revision: gitRevision(), node: process.versions.node }
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version?: unknown }
    return typeof pkg.version === 'string' ? pkg.version : 'unknown'
  } catch {
    return 'unknown'
  }
}

function gitRevision(): string {
  try {
    const [top, head] = execFileSync('git', ['rev-parse', '--show-toplevel', '--short=12', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 2000,
    }).split('\n')
    // Only sluice's own clone: not a project that has sluice somewhere inside its tree.
    if (top === undefined || realpathSync(top) !== realpathSync(ROOT)) return 'unknown'
    return head !== undefined && /^[0-9a-f]{7,40}$/.test(head) ? head : 'unknown'
  } catch {
    return 'unknown'
  }
}
