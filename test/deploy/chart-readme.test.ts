import { describe, expect, it } from 'vitest'
import { readText } from './chart.js'
import { BEGIN, END, README, regenerated, valuePaths } from './chart-readme.js'

/** helm/sluice/README.md lists every value, as values.schema.json and values.yaml say them. */

describe('helm/sluice/README.md', () => {
  const readme = readText(README)

  it('holds the values table generated from the schema and the defaults (npm run chart:readme rewrites it)', () => {
    expect(readme).toContain(BEGIN)
    expect(readme).toContain(END)
    expect(regenerated(readme) === readme, 'the values table is stale: run npm run chart:readme').toBe(true)
  })

  it('names every value of values.yaml, in a row of its own', () => {
    const table = readme.slice(readme.indexOf(BEGIN), readme.indexOf(END))
    const rows = table.split('\n').filter((l) => l.startsWith('| `'))
    const keys = rows.map((r) => /^\| `([^`]+)`/.exec(r)![1])
    const paths = valuePaths().map((p) => p.join('.'))
    expect(paths.length).toBeGreaterThan(80)
    expect(keys).toEqual(paths)
    for (const row of rows) expect(row.split(' | ').at(-1)!.replace(/ \|$/, '').trim().length, row).toBeGreaterThan(5)
  })
})
