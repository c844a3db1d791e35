/**
 * `node --import tsx bench/compare/heap-census.ts A.heapsnapshot B.heapsnapshot [divisor]`: what B
 * holds more than A, by constructor (objects, closures, strings, code, …), as counts and self bytes,
 * divided by `divisor` (e.g. the waiters queued in B and not in A) — how the bytes per queued request
 * of docs/benchmarks.md were found. Snapshots: `node --heapsnapshot-signal=SIGUSR2 dist/main.js`.
 */
import { readFileSync } from 'node:fs'

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } }
  nodes: number[]
  strings: string[]
}

function census(file: string): Map<string, { count: number; bytes: number }> {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot
  const fields = s.snapshot.meta.node_fields
  const types = s.snapshot.meta.node_types[0]
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [
    number,
    number,
    number,
  ]
  const out = new Map<string, { count: number; bytes: number }>()
  for (let i = 0; i < s.nodes.length; i += fields.length) {
    const type = types[s.nodes[i + typeAt]!]!
    const name =
      type === 'object' || type === 'closure' || type === 'native' ? `${type}:${s.strings[s.nodes[i + nameAt]!]}` : type
    const e = out.get(name) ?? { count: 0, bytes: 0 }
    e.count++
    e.bytes += s.nodes[i + sizeAt]!
    out.set(name, e)
  }
  return out
}

const [a, b, by] = process.argv.slice(2)
const before = census(a!)
const after = census(b!)
const divisor = Number(by ?? 1)
const rows = [...after].map(([name, e]) => {
  const o = before.get(name) ?? { count: 0, bytes: 0 }
  return { name, count: (e.count - o.count) / divisor, bytes: (e.bytes - o.bytes) / divisor }
})
rows.sort((x, y) => y.bytes - x.bytes)
let total = 0
for (const r of rows) total += r.bytes
process.stdout.write(`total ${total.toFixed(0)} bytes per unit\n`)
for (const r of rows.slice(0, Number(process.env.TOP ?? 40)))
  process.stdout.write(
    `${r.bytes.toFixed(0).padStart(8)} B ${r.count.toFixed(2).padStart(8)} × ${r.name.slice(0, 100)}\n`,
  )
