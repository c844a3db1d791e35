/**
 * A replica's CPU profile (`node --cpu-prof`) summed by where the time went: sluice's own areas
 * (`src/<area>`), each package, Node's internals, native code and the idle loop, self time only.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string }
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[]
  readonly samples: readonly number[]
  readonly timeDeltas: readonly number[]
}

/** Where a frame belongs: `src/limiter/redis`, `undici`, `node:internal`, `(garbage collector)`, … */
export function placeOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1]!
  const own = /\/dist\/((?:limiter\/redis|limiter|[^/]+))\//.exec(url)
  if (own) return `src/${own[1]!}`
  if (/\/dist\/[^/]+\.js$/.test(url)) return 'src'
  if (url.startsWith('node:')) return 'node: (internals)'
  return url
}

/** Self time (ms) by place, over every profile in `dir`, largest first. */
export function summarise(dir: string): { place: string; ms: number }[] {
  const total = new Map<string, number>()
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile
    const place = new Map(profile.nodes.map((n) => [n.id, placeOf(n.callFrame)]))
    profile.samples.forEach((id, i) => {
      const where = place.get(id) ?? '(unknown)'
      total.set(where, (total.get(where) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000)
    })
  }
  return [...total].map(([p, ms]) => ({ place: p, ms })).sort((a, b) => b.ms - a.ms)
}
