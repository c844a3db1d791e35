import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify } from 'yaml'
import { loadSettings } from '../../src/config/load.js'
import {
  CHART_DIR,
  at,
  chartValues,
  exampleValueFiles,
  isTree,
  readText,
  readYamlFile,
  REPO,
  stripComments,
  templateActions,
  templates,
  type Tree,
} from './chart.js'

/**
 * The chart read as text, without helm: its files parse, its templates are well formed, every
 * value a template reads exists in values.yaml (and every value is read), and the settings it
 * ships are ones sluice accepts.
 */

const actionsByFile = new Map([...templates()].map(([name, text]) => [name, templateActions(stripComments(text))]))

/** `.Values.a.b` and `$v.a.b` (where `$v := .Values` or `$ctx.Values`) → ['a', 'b']. */
function valuePaths(actions: readonly string[]): string[][] {
  const aliases = actions.some((a) => /^\$v\s*:=\s*(\$ctx)?\.Values$/.test(a)) ? ['\\.Values', '\\$v'] : ['\\.Values']
  const ref = new RegExp(`(?:${aliases.join('|')})((?:\\.[A-Za-z_][A-Za-z0-9_]*)+)`, 'g')
  return actions.flatMap((a) => [...a.matchAll(ref)].map((m) => m[1]!.slice(1).split('.')))
}

/** Leaf paths of values.yaml: descends into non-empty maps only (an empty map or a list is one leaf). */
function leafPaths(tree: Tree, prefix: string[] = []): string[][] {
  return Object.entries(tree).flatMap(([k, v]) =>
    isTree(v) && Object.keys(v).length > 0 ? leafPaths(v, [...prefix, k]) : [[...prefix, k]],
  )
}

/** Values whose children are Kubernetes or sluice objects passed through whole: any key is fine below them. */
const PASSED_THROUGH = [
  'settings',
  'resources',
  'securityContext',
  'podSecurityContext',
  'strategy',
  'probes.startup',
  'probes.liveness',
  'probes.readiness',
]

/** Keys of `override` (a values file) that values.yaml does not have. */
function unknownKeys(override: Tree, defaults: Tree, prefix: string[] = []): string[] {
  return Object.entries(override).flatMap(([k, v]) => {
    const path = [...prefix, k]
    if (!(k in defaults)) return [path.join('.')]
    const d = defaults[k]
    if (PASSED_THROUGH.includes(path.join('.')) || !isTree(d) || Object.keys(d).length === 0 || !isTree(v)) return []
    return unknownKeys(v, d, path)
  })
}

/** Validates a settings map exactly as a sluice process given it as its SLUICE_CONFIG file would. */
function acceptedBySluice(settings: unknown): void {
  const file = join(mkdtempSync(join(tmpdir(), 'sluice-chart-')), 'settings.yaml')
  writeFileSync(file, stringify(settings))
  loadSettings({ SLUICE_CONFIG: file })
}

describe('helm/sluice read as text', () => {
  it('Chart.yaml and values.yaml parse; appVersion, the image tag and package.json agree', () => {
    const chart = readYamlFile(join(CHART_DIR, 'Chart.yaml')) as Tree
    const pkg = JSON.parse(readText(join(REPO, 'package.json'))) as { version: string }
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'sluice', type: 'application' })
    expect(chart.version).toMatch(/^\d+\.\d+\.\d+$/)
    expect(chart.appVersion).toBe(pkg.version)
    expect(at(chartValues(), ['image', 'tag'])).toBe(pkg.version)
    expect(at(chartValues(), ['mode'])).toBe('deployment')
  })

  it('every template has balanced blocks and includes only templates the chart defines', () => {
    const defined = new Set(
      [...actionsByFile.values()].flat().flatMap((a) => [...a.matchAll(/^define\s+"([^"]+)"/g)].map((m) => m[1]!)),
    )
    expect(defined).toContain('sluice.sidecar')
    expect(defined).toContain('sluice.sidecarVolumes')
    for (const [file, actions] of actionsByFile) {
      let depth = 0
      for (const a of actions) {
        if (/^(if|with|range|define|block)\b/.test(a)) depth++
        else if (/^end\b/.test(a)) depth--
        expect(depth, `${file}: {{ end }} without an opening block`).toBeGreaterThanOrEqual(0)
      }
      expect(depth, `${file}: a block is not closed`).toBe(0)
      for (const a of actions) {
        for (const m of a.matchAll(/\b(?:include|template)\s+"([^"]+)"/g))
          expect(defined, `${file} includes ${m[1]}`).toContain(m[1])
      }
    }
  })

  it('every value a template reads exists in values.yaml, and every value in values.yaml is read', () => {
    const values = chartValues()
    const read = [...actionsByFile.values()].flatMap(valuePaths)
    expect(read.length).toBeGreaterThan(30)
    const missing = read.filter((p) => at(values, p) === undefined).map((p) => p.join('.'))
    expect(missing).toEqual([])
    const unread = leafPaths(values)
      .filter((leaf) => !read.some((r) => r.length <= leaf.length && r.every((k, i) => k === leaf[i])))
      .map((p) => p.join('.'))
    expect(unread).toEqual([])
  })

  it('the example values files use only keys values.yaml has, and their settings are accepted by sluice', () => {
    const files = exampleValueFiles()
    expect(files.map((f) => basename(f)).sort()).toEqual([
      'apps-and-keys.yaml',
      'redis-cluster-tls.yaml',
      'redis-cluster.yaml',
      'redis-sentinel-tls.yaml',
      'redis-sentinel.yaml',
      'redis-tls.yaml',
      'shared-egress.yaml',
      'sidecar.yaml',
      'upstreams.yaml',
    ])
    for (const file of files) {
      const example = readYamlFile(file) as Tree
      expect(unknownKeys(example, chartValues()), file).toEqual([])
      expect(isTree(example.settings), `${file} shows settings`).toBe(true)
      expect(() => acceptedBySluice(example.settings), file).not.toThrow()
    }
  })

  it('the settings example commented in values.yaml is accepted by sluice', () => {
    const lines = readText(join(CHART_DIR, 'values.yaml')).split('\n')
    const start = lines.indexOf('settings: {}')
    expect(start).toBeGreaterThan(0)
    const commented = lines
      .slice(start + 1)
      .filter((_, i, rest) => rest.slice(0, i + 1).every((l) => l.startsWith('#  ')))
    expect(commented.length).toBeGreaterThan(5)
    const example = parseYaml(commented.map((l) => l.slice(1)).join('\n')) as Tree
    expect(Object.keys(example)).toContain('shutdown')
    expect(() => acceptedBySluice(example)).not.toThrow()
  })
})
