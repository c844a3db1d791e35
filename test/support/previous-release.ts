import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The previous release (N−1) for the version-skew tests (docs/deploy.md "Version skew"): the newest
 * CHANGELOG.md entry with a commit (`## x.y.z — <commit>`), its tree taken from git (`git archive`, nothing
 * written to the repository) and built in a temporary folder with this checkout's node_modules.
 */
export const REPO = fileURLToPath(new URL('../..', import.meta.url))

/** `## 0.1.0 — 879d1ac (…)`: the newest release with a commit, and its version. */
export function previousRelease(changelog: string): { version: string; commit: string } | undefined {
  const m = /^## (\d+\.\d+\.\d+) — ([0-9a-f]{7,40})\b/m.exec(changelog)
  return m === null ? undefined : { version: m[1]!, commit: m[2]! }
}

export const previous = previousRelease(readFileSync(join(REPO, 'CHANGELOG.md'), 'utf8'))

/** Whether the previous release's commit is in this clone's history (not in a shallow clone). */
export const previousInHistory =
  previous !== undefined &&
  spawnSync('git', ['cat-file', '-e', `${previous.commit}^{commit}`], { cwd: REPO, stdio: 'ignore' }).status === 0

export const previousMissingWhy =
  previous === undefined
    ? 'CHANGELOG.md names no previous release with a commit'
    : `the previous release's commit ${previous.commit} is not in this clone's history (a shallow clone?)`

/**
 * Builds the release's tree and returns its folder, kept per commit and per checkout (a second run reuses it;
 * another clone's build, whose node_modules link may point at a folder since removed, is never used). Built
 * in a folder of its own and renamed into place, so two test files building at once never read a half-built
 * tree.
 */
export function buildRelease(commit: string): string {
  const checkout = Buffer.from(REPO).toString('base64url').slice(-24)
  const dir = join(tmpdir(), `sluice-release-${commit}-${checkout}`)
  if (existsSync(join(dir, 'dist', 'main.js'))) return dir
  const building = `${dir}.${process.pid}.${Date.now()}`
  mkdirSync(building, { recursive: true })
  try {
    execFileSync('sh', ['-c', `git archive --format=tar ${commit} | tar -x -C "${building}"`], { cwd: REPO })
    symlinkSync(join(REPO, 'node_modules'), join(building, 'node_modules'))
    execFileSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: building,
    })
    execFileSync(process.execPath, ['scripts/copy-assets.mjs'], { cwd: building })
    if (!existsSync(join(dir, 'dist', 'main.js'))) {
      rmSync(dir, { recursive: true, force: true })
      renameSync(building, dir)
    }
  } finally {
    rmSync(building, { recursive: true, force: true })
  }
  return dir
}
