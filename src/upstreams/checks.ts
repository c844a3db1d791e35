import { PROFILE_NAMES } from './profiles.js'
import { DEFAULT_UPSTREAM } from './scope.js'
import type { UpstreamEntry } from './settings.js'

/** A problem of the upstream list as a whole, at the key it names (docs/upstreams.md, "Refused at start"). */
export interface UpstreamProblem {
  readonly path: (string | number)[]
  readonly message: string
}

/** Whether two prefixes route some path alike: equal, or one below the other (routing ignores case, as admission does). */
const overlap = (a: string, b: string): boolean => {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  return x === y || x.startsWith(`${y}/`) || y.startsWith(`${x}/`)
}

/** Names used twice (the CRM's own is `neon`), prefixes that overlap, profiles that do not exist, an upstream with nothing to limit by. */
export function checkUpstreams(basePath: string, upstreams: readonly UpstreamEntry[]): UpstreamProblem[] {
  const problems: UpstreamProblem[] = []
  const names = new Map<string, string>([[DEFAULT_UPSTREAM, "the CRM's own upstream (upstream, basePath)"]])
  const prefixes: { prefix: string; owner: string }[] = [{ prefix: basePath, owner: `basePath ${basePath}` }]
  upstreams.forEach((u, i) => {
    const seen = names.get(u.name)
    if (seen !== undefined) problems.push({ path: [i, 'name'], message: `"${u.name}" is already the name of ${seen}` })
    else names.set(u.name, `upstreams.${i}`)
    const clash = prefixes.find((p) => overlap(p.prefix, u.prefix))
    if (clash !== undefined)
      problems.push({
        path: [i, 'prefix'],
        message: `${u.prefix} overlaps ${clash.owner}: every path must route to one upstream`,
      })
    prefixes.push({ prefix: u.prefix, owner: `upstreams.${i}.prefix ${u.prefix}` })
    if (u.profile !== undefined && !PROFILE_NAMES.includes(u.profile))
      problems.push({ path: [i, 'profile'], message: `no such profile; there are ${PROFILE_NAMES.join(', ')}` })
    if (u.profile === undefined && u.catalog === undefined)
      problems.push({ path: [i, 'catalog'], message: 'needs a catalog (inline or a file) or a profile' })
  })
  return problems.map((p) => ({ ...p, path: ['upstreams', ...p.path] }))
}
