/**
 * The catalog endpoint an override key most likely meant (same method, a small edit distance): a typo
 * is not a new unknown path to limit (docs/configuration.md, "When a setting is wrong").
 */

/** Edits allowed: up to 3, and at most a quarter of the path, so short paths need a closer match. */
const maxEdits = (path: string): number => Math.min(3, Math.floor(path.length / 4))

export function nearestEndpointId(key: string, ids: Iterable<string>): string | undefined {
  const space = key.indexOf(' ')
  const method = key.slice(0, space + 1)
  const path = key.slice(space + 1).toLowerCase()
  const limit = maxEdits(path)
  let best: string | undefined
  let bestDistance = limit + 1
  for (const id of ids) {
    if (!id.startsWith(method)) continue
    const other = id.slice(method.length).toLowerCase()
    if (Math.abs(other.length - path.length) >= bestDistance) continue
    const d = editDistance(path, other, bestDistance)
    if (d < bestDistance) {
      best = id
      bestDistance = d
    }
  }
  return best
}

/** Levenshtein distance, giving up (returning `bound`) once it cannot be below `bound`. */
function editDistance(a: string, b: string, bound: number): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    let rowMin = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      const v = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost)
      row.push(v)
      if (v < rowMin) rowMin = v
    }
    if (rowMin >= bound) return bound
    prev = row
  }
  return prev[b.length]!
}
