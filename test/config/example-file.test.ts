import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { envBindings } from '../../src/config/env.js'
import { defaultSettings, loadSettings } from '../../src/config/load.js'
import { settingsSchema } from '../../src/config/schema.js'

/** config/sluice.example.yaml shows every setting at its default: copying it changes nothing. */
const EXAMPLE = fileURLToPath(new URL('../../config/sluice.example.yaml', import.meta.url))

describe('config/sluice.example.yaml', () => {
  it('loads to exactly the defaults', () => {
    expect(loadSettings({ SLUICE_CONFIG: EXAMPLE })).toEqual(defaultSettings())
  })

  it('names every setting (a setting without a default as a commented-out line)', () => {
    const lines = readFileSync(EXAMPLE, 'utf8').split('\n')
    const missing: string[] = []
    for (const { path } of envBindings(settingsSchema)) {
      // the key's line, indented two spaces per level under its parent, possibly commented out
      const key = path[path.length - 1]!
      const indent = '  '.repeat(path.length - 1)
      const found = lines.some((l) => l.startsWith(`${indent}${key}:`) || l.startsWith(`${indent}# ${key}:`))
      if (!found) missing.push(path.join('.'))
    }
    expect(missing).toEqual([])
  })
})
