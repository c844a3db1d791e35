import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readDoc, ROOT, settingRows, settings, shownDefaults, sourceText } from './code-facts.js'

const README = readDoc('README.md')

/**
 * README is the user's document: short, and true to the code. The full reference it links to is
 * held to the code by test/docs/configuration-is-true.test.ts; links by links-resolve.test.ts.
 */
describe('README.md', () => {
  it('is at most 30,000 bytes (reference in docs/configuration.md, history in docs/)', () => {
    expect(Buffer.byteLength(README, 'utf8')).toBeLessThanOrEqual(30_000)
  })

  it('shows how to run the tests and the demo', () => {
    expect(README).toMatch(/^npm test\b/m)
    expect(README).toContain('npm ci && npm run demo')
  })

  it('its settings table gives each setting the env var and the default the code has', () => {
    const known = new Map(settings().map((s) => [s.path, s]))
    const rows = settingRows(README)
    expect(rows.length).toBeGreaterThan(10)
    const wrong = rows.flatMap((row) => {
      const setting = known.get(row.path)
      if (setting === undefined) return [`${row.path}: no such setting`]
      if (row.env !== setting.env) return [`${row.path}: README says ${row.env}, the code ${setting.env}`]
      if (!shownDefaults(setting.value).includes(row.shown)) return [`${row.path}: README says ${row.shown}, the code ${JSON.stringify(setting.value)}`]
      return []
    })
    expect(wrong).toEqual([])
  })

  it('names only codes the code has', () => {
    const envVars = new Set(settings().map((s) => s.env))
    // not codes: env vars, and the env var naming rule's own example
    const notCodes = (name: string): boolean =>
      envVars.has(name) || name === 'SLUICE_CONFIG' || name === 'SLUICE_A_B_C' || /^SLUICE_(ORG_KEY|TEST|BENCH)_/.test(name)
    const named = [...new Set([...README.matchAll(/\bSLUICE_[A-Z0-9][A-Z0-9_]*/g)].map((m) => m[0]))].filter((n) => !notCodes(n))
    expect(named.length).toBeGreaterThan(5)
    const source = sourceText()
    expect(named.filter((code) => !source.includes(`'${code}'`))).toEqual([])
  })

  it('links only to files that exist', () => {
    const links = [...README.matchAll(/\]\(((?!https?:|#)[^)]+)\)/g)].map((m) => m[1]!)
    expect(links.length).toBeGreaterThan(5)
    // a link into a file (`docs/x.md#part`) needs the file
    expect(links.filter((l) => !existsSync(join(ROOT, l.replace(/#.*$/, ''))))).toEqual([])
  })
})
