import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * Files a newcomer can read in one go: no source file is over 400 lines (each module has one job;
 * docs/development.md, "Layout").
 */
const SRC = fileURLToPath(new URL('../../src', import.meta.url))
const MAX_LINES = 400

describe('source files', () => {
  it(`are at most ${MAX_LINES} lines in src/`, () => {
    const lengths = readdirSync(SRC, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts'))
      .map((name) => ({ file: `src/${name}`, lines: readFileSync(join(SRC, name), 'utf8').split('\n').length - 1 }))
    expect(lengths.length).toBeGreaterThan(100) // the scan sees the files at all
    expect(lengths.filter((f) => f.lines > MAX_LINES)).toEqual([])
  })
})
