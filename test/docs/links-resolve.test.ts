import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readDoc, ROOT } from './code-facts.js'

/** README.md and every page under docs/ */
function documents(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(ROOT, dir)).flatMap((name) => {
      const rel = join(dir, name)
      return statSync(join(ROOT, rel)).isDirectory() ? walk(rel) : rel.endsWith('.md') ? [rel] : []
    })
  return ['README.md', ...walk('docs')]
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, each space a hyphen. */
const slug = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')

const anchorsOf = (text: string): Set<string> => new Set([...text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)))

/** Content moved between README and docs/: a link to a part that moved must follow it. */
describe('links between README and docs/', () => {
  it('every link to a file finds the file, and every link to a part finds that heading', () => {
    const broken: string[] = []
    for (const doc of documents()) {
      const text = readDoc(doc).replace(/^```[\s\S]*?^```/gm, '')
      for (const m of text.matchAll(/\]\(((?!https?:|mailto:)[^)\s]+)\)/g)) {
        const [file, anchor] = m[1]!.split('#') as [string, string | undefined]
        const target = file === '' ? doc : relative(ROOT, join(ROOT, dirname(doc), file))
        if (!existsSync(join(ROOT, target))) broken.push(`${doc}: ${m[1]} (no file ${target})`)
        else if (anchor !== undefined && target.endsWith('.md') && !anchorsOf(readDoc(target)).has(anchor)) broken.push(`${doc}: ${m[1]} (no such heading in ${target})`)
      }
    }
    expect(broken).toEqual([])
  })
})
