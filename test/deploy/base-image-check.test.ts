import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { REPO } from './chart.js'
import { readDockerfile } from './dockerfile.js'

/**
 * scripts/check-base-image.sh, which checks the pinned base image against its registry where one is
 * reachable (not here). crane is a stand-in on PATH answering as the registry would: the script's
 * own logic (which digest it reads, what it concludes) runs for real.
 */

const dir = mkdtempSync(join(tmpdir(), 'sluice-crane-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
// `crane digest <tag>` prints $TAG_DIGEST (fails when empty); `crane manifest <ref>` succeeds for $KNOWN only
writeFileSync(
  join(dir, 'crane'),
  '#!/bin/sh\ncase "$1" in\n  digest) [ -n "$TAG_DIGEST" ] && echo "$TAG_DIGEST" ;;\n  manifest) [ "$2" = "$KNOWN" ] ;;\n  *) exit 9 ;;\nesac\n',
)
chmodSync(join(dir, 'crane'), 0o755)

const pinned = readDockerfile().args.get('NODE_IMAGE')!
const [tag, digest] = pinned.split('@') as [string, string]
const OTHER = `sha256:${'1'.repeat(64)}`

const check = (registry: { TAG_DIGEST: string; KNOWN: string }): { status: number | null; out: string } => {
  const run = spawnSync(join(REPO, 'scripts/check-base-image.sh'), [], {
    encoding: 'utf8',
    env: { PATH: `${dir}:/usr/bin:/bin`, ...registry },
  })
  return { status: run.status, out: run.stdout + run.stderr }
}

describe('scripts/check-base-image.sh (crane answered by a stand-in)', () => {
  it("0 when the tag still points at the Dockerfile's pin", () => {
    expect(pinned).toMatch(/^node:22-bookworm-slim@sha256:[0-9a-f]{64}$/)
    expect(check({ TAG_DIGEST: digest, KNOWN: '' })).toEqual({ status: 0, out: `ok: ${tag} is ${digest}\n` })
  })

  it('2 when the pin exists but the tag has moved on; 1 when the pin does not exist', () => {
    const moved = check({ TAG_DIGEST: OTHER, KNOWN: pinned })
    expect(moved.status).toBe(2)
    expect(moved.out).toContain(`has moved on to ${OTHER}`)
    const missing = check({ TAG_DIGEST: OTHER, KNOWN: '' })
    expect(missing.status).toBe(1)
    expect(missing.out).toContain(`the pinned ${pinned} does not exist`)
  })

  it('3 when the registry cannot be read: nothing checked, and it says so', () => {
    const offline = check({ TAG_DIGEST: '', KNOWN: '' })
    expect(offline.status).toBe(3)
    expect(offline.out).toContain('nothing checked')
  })
})
