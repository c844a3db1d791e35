import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../src/config/load.js'
import { answerCodes, answerRows, readDoc, ROOT, settingRows, settings, shownDefaults, sourceText } from './code-facts.js'

const CONFIGURATION = readDoc('docs/configuration.md')
/** where the table of the proxy's own answers lives (README links to it) */
const ANSWERS = readDoc('docs/requests.md')

/** The full reference says what the code does: every setting, every code an answer can carry. */
describe('docs/configuration.md and the table of answers', () => {
  it('list every setting with its env var and its default, and no setting the code lacks', () => {
    const rows = new Map(settingRows(CONFIGURATION).map((r) => [r.path, r]))
    const wrong: string[] = []
    for (const s of settings()) {
      const row = rows.get(s.path)
      if (row === undefined) wrong.push(`${s.path} (${s.env}): missing`)
      else if (row.env !== s.env) wrong.push(`${s.path}: the page says ${row.env}, the code ${s.env}`)
      else if (!shownDefaults(s.value).includes(row.shown)) wrong.push(`${s.path}: the page says ${row.shown}, the code ${JSON.stringify(s.value)}`)
      rows.delete(s.path)
    }
    expect(wrong).toEqual([])
    expect([...rows.keys()]).toEqual([])
  })

  it('document every code: answers in the table of answers with their status, the others (start-up, log) in a table of codes', () => {
    const codes = answerCodes()
    expect(codes.size).toBeGreaterThan(15)
    const answers = answerRows(ANSWERS)
    // `| \`SLUICE_…\` | when |`: codes that stop the start (configuration.md) or only name an event in the log (requests.md)
    const others = new Set([CONFIGURATION, ANSWERS].flatMap((text) => [...text.matchAll(/^\| `(SLUICE_[A-Z0-9_]+)` \|/gm)].map((m) => m[1]!)))
    expect([...codes.keys()].filter((c) => !answers.has(c) && !others.has(c)).sort()).toEqual([])
    const disagree = [...codes]
      .filter(([code, status]) => answers.has(code) && answers.get(code) !== status)
      .map(([code, status]) => `${code}: docs ${answers.get(code)}, code ${status}`)
    expect(disagree).toEqual([])
    // and every row is a code the source answers with (fallbacks such as SLUICE_INTERNAL are plain strings)
    const source = sourceText()
    expect([...answers.keys(), ...others].filter((c) => !source.includes(`'${c}'`))).toEqual([])
  })

  it('the example settings file it points to loads', () => {
    expect(() => loadSettings({ SLUICE_CONFIG: join(ROOT, 'config/sluice.example.yaml') })).not.toThrow()
  })
})
