import { join, posix } from 'node:path'
import { readText, REPO } from './chart.js'

/** A small Dockerfile reader: enough for the tests to check what the image runs and what it holds. */

export interface Instruction {
  readonly op: string
  readonly args: string
}
export interface Stage {
  readonly from: string
  readonly name: string | undefined
  readonly instructions: Instruction[]
}

export function readDockerfile(path = join(REPO, 'Dockerfile')): { args: Map<string, string>; stages: Stage[] } {
  const lines = readText(path)
    .replace(/\\\r?\n/g, ' ') // line continuations
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
  const args = new Map<string, string>()
  const stages: Stage[] = []
  for (const line of lines) {
    const m = /^(\S+)\s+(.*)$/.exec(line)
    if (!m) throw new Error(`cannot read Dockerfile line: ${line}`)
    const op = m[1]!.toUpperCase()
    const rest = m[2]!
    if (op === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest)
      if (!from) throw new Error(`cannot read FROM ${rest}`)
      stages.push({
        from: from[1]!.replace(/\$\{(\w+)\}/g, (_, k: string) => args.get(k) ?? ''),
        name: from[2],
        instructions: [],
      })
    } else if (op === 'ARG' && stages.length === 0) {
      const [k, v = ''] = rest.split('=', 2)
      args.set(k!, v)
    } else {
      const stage = stages.at(-1)
      if (!stage) throw new Error(`${op} before FROM`)
      stage.instructions.push({ op, args: rest })
    }
  }
  return { args, stages }
}

/** The JSON (exec) form of CMD/ENTRYPOINT/HEALTHCHECK CMD, or undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined
  const parsed = JSON.parse(args) as unknown
  return Array.isArray(parsed) && parsed.every((s) => typeof s === 'string') ? parsed : undefined
}

export interface Copy {
  readonly from: string | undefined
  readonly sources: string[]
  readonly dest: string
}

export function copies(stage: Stage): Copy[] {
  return stage.instructions
    .filter((i) => i.op === 'COPY')
    .map((i) => {
      const words = i.args.split(/\s+/)
      const flags = words.filter((w) => w.startsWith('--'))
      const paths = words.filter((w) => !w.startsWith('--'))
      const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length)
      return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! }
    })
}

/** Where each source of a COPY lands, relative to the WORKDIR (`COPY a b ./` puts them at `a`, `b`). */
export function targets(copy: Copy): { source: string; target: string }[] {
  const intoDir = copy.dest.endsWith('/') || copy.dest === '.' || copy.sources.length > 1
  return copy.sources.map((source) => ({
    source,
    target: posix.normalize(intoDir ? posix.join(copy.dest, posix.basename(source)) : copy.dest).replace(/^\.\//, ''),
  }))
}

/**
 * Whether a .dockerignore excludes `path` (relative to the context). Supports what ours uses:
 * names and globs with `*`, `**` and `?`, `!` exceptions, last match wins, a pattern matching a
 * directory excludes what is inside it.
 */
export function dockerIgnored(patterns: readonly string[], path: string): boolean {
  let ignored = false
  for (const raw of patterns) {
    const negated = raw.startsWith('!')
    const pattern = (negated ? raw.slice(1) : raw).replace(/^\/+|\/+$/g, '')
    const re = new RegExp(
      '^' +
        pattern
          .split('')
          .map((c, i, all) =>
            c === '*'
              ? all[i + 1] === '*'
                ? ''
                : all[i - 1] === '*'
                  ? '.*'
                  : '[^/]*'
              : c === '?'
                ? '[^/]'
                : c.replace(/[.+^${}()|[\]\\]/g, '\\$&'),
          )
          .join('') +
        '(/.*)?$',
    )
    if (re.test(path)) ignored = !negated
  }
  return ignored
}

export const dockerignorePatterns = (): string[] =>
  readText(join(REPO, '.dockerignore'))
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))

/** `k=v k2="v 2"` (ENV, LABEL, ARG) as a map; quotes removed, `${ARG}` left as written. */
export function keyValues(args: string): Map<string, string> {
  const pairs = new Map<string, string>()
  for (const m of args.matchAll(/([A-Za-z0-9_.-]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const raw = m[2]!
    pairs.set(m[1]!, raw.startsWith('"') ? (JSON.parse(raw) as string) : raw)
  }
  return pairs
}

/** Every `k=v` of the stage's instructions named `op` (ENV or LABEL), later ones winning. */
export const stageKeyValues = (stage: Stage, op: 'ENV' | 'LABEL'): Map<string, string> =>
  new Map(stage.instructions.filter((i) => i.op === op).flatMap((i) => [...keyValues(i.args)]))
