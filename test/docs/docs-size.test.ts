import { readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * docs/ stays small enough to hold in one's head and to keep true (docs/development.md, "Rules the
 * layout tests enforce"): the current truth, not run logs, which stay in git history.
 */
const DOCS = fileURLToPath(new URL('../../docs', import.meta.url))
const MAX_TOTAL_BYTES = 200_000
const MAX_FILE_BYTES = 30_000

/** Every file under `dir` with its size in bytes, as `du -b` counts it. */
function fileSizes(dir: string): { file: string; bytes: number }[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    const stat = statSync(path)
    return stat.isDirectory() ? fileSizes(path) : [{ file: relative(DOCS, path), bytes: stat.size }]
  })
}

describe('docs/', () => {
  const sizes = fileSizes(DOCS)

  it(`is at most ${MAX_TOTAL_BYTES} bytes in all`, () => {
    expect(sizes.length).toBeGreaterThan(5)
    expect(sizes.reduce((sum, s) => sum + s.bytes, 0)).toBeLessThanOrEqual(MAX_TOTAL_BYTES)
  })

  it(`has no file over ${MAX_FILE_BYTES} bytes`, () => {
    expect(sizes.filter((s) => s.bytes > MAX_FILE_BYTES).map((s) => `${s.file}: ${s.bytes} bytes`)).toEqual([])
  })
})
