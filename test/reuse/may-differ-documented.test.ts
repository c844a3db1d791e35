import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { MAY_DIFFER } from '../../src/reuse/index.js'

// docs/reuse.md's table of the headers that may differ between requests sharing an answer is the
// list the code uses, name for name (the README's guarantee 7 links to it).

const DOC = readFileSync(new URL('../../docs/reuse.md', import.meta.url), 'utf8')

describe('docs/reuse.md "What may differ"', () => {
  it('names exactly the headers of MAY_DIFFER', () => {
    const section = DOC.split('\n## What may differ\n')[1]!.split('\n## ')[0]!
    const rows = section.split('\n').filter((l) => l.startsWith('| `'))
    const documented = rows.flatMap((row) =>
      [...row.split('|')[1]!.matchAll(/`([A-Za-z0-9-]+)`/g)].map((m) => m[1]!.toLowerCase()),
    )
    expect(documented.sort()).toEqual([...MAY_DIFFER].sort())
  })
})
