/** A small reader of the Prometheus text format, for tests: every sample with its labels. */
export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

const unescape = (v: string): string => v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))

export function parsePromText(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = SAMPLE.exec(line)
    if (!m) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, k, v] of (m[2] ?? '').matchAll(LABEL)) labels[k!] = unescape(v!)
    const raw = m[3]!
    samples.push({ name: m[1]!, labels, value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) })
  }
  return samples
}

/** The value of the one sample of `name` whose labels include `labels`; throws if none or several. */
export function valueOf(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = select(samples, name, labels)
  if (found.length !== 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`)
  return found[0]!.value
}

export function select(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
}
