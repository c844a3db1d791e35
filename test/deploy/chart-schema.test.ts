import { describe, expect, it } from 'vitest'
import { chartValues, isTree, type Tree } from './chart.js'
import { canRender, render, renderOk } from './render.js'
import { nodeAt, objectNodes, valuesSchema } from './schema.js'
import { needs } from '../support/tools.js'

/**
 * values.schema.json: it covers every value, refuses unknown keys everywhere but in the few
 * Kubernetes objects passed through whole, and the render check (helm-render, which validates
 * values as Helm 3 does) refuses a typo or a wrong type anywhere, with the key named.
 */

const schema = valuesSchema()
const values = chartValues()

/**
 * Objects whose keys the schema leaves open, each for a reason: Helm's `global` (a parent chart
 * may pass anything), sluice's own settings (sluice checks them at start, exit 78 naming the key,
 * and test/deploy checks the shipped examples with sluice's loader), and deep Kubernetes structures
 * that the rendered manifests' Kubernetes schemas check (chart-k8s-schemas.test.ts).
 */
const OPEN = [
  '#/properties/global',
  '#/properties/settings',
  '#/properties/affinity/properties/nodeAffinity',
  '#/properties/affinity/properties/podAffinity',
  '#/properties/affinity/properties/podAntiAffinity',
  '#/definitions/containerSecurityContext/properties/seLinuxOptions',
  '#/definitions/containerSecurityContext/properties/appArmorProfile',
  '#/definitions/containerSecurityContext/properties/windowsOptions',
  '#/definitions/podSecurityContext/properties/seLinuxOptions',
  '#/definitions/podSecurityContext/properties/appArmorProfile',
  '#/definitions/podSecurityContext/properties/windowsOptions',
  '#/definitions/envVar/properties/valueFrom',
  '#/definitions/volume',
]

/** Paths of values.yaml: every key, descending into non-empty maps. */
function paths(tree: Tree, prefix: string[] = []): string[][] {
  return Object.entries(tree).flatMap(([k, v]) => [
    [...prefix, k],
    ...(isTree(v) && Object.keys(v).length > 0 && k !== 'settings' ? paths(v, [...prefix, k]) : []),
  ])
}
const setAt = (path: readonly string[], value: unknown): Tree =>
  path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as Tree

/** A value of the wrong type for a schema node: a string where none is wanted, a number where a string is, a word for a quantity. */
function wrongTypeFor(path: readonly string[]): unknown {
  const node = nodeAt(schema, path)!
  const types = [node.type ?? node.oneOf?.map((o) => o.type)].flat()
  if (types.includes('string') && types.includes('number')) return 'lots' // a quantity: 128Mi or 0.5, not a word
  return types.includes('string') ? 12345 : 'not-a-valid-value'
}

describe('values.schema.json as data', () => {
  it('is draft-07 and every object refuses unknown keys (additionalProperties false or typed), but the open ones listed', () => {
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#')
    const open = objectNodes(schema)
      .filter(({ node }) => node.additionalProperties === undefined || node.additionalProperties === true)
      .map(({ pointer }) => pointer)
    expect(open).toEqual(OPEN)
  })

  it('has a node, with a type, for every key of values.yaml, and a description for every top-level key', () => {
    const all = paths(values)
    expect(all.length).toBeGreaterThan(80)
    const missing = all.filter((p) => nodeAt(schema, p) === undefined).map((p) => p.join('.'))
    expect(missing).toEqual([])
    const untyped = all.filter((p) => {
      const n = nodeAt(schema, p)!
      return n.type === undefined && n.oneOf === undefined
    })
    expect(untyped.map((p) => p.join('.'))).toEqual([])
    for (const key of Object.keys(values)) expect(nodeAt(schema, [key])?.description, key).toBeTruthy()
    // every schema property exists in values.yaml too (global aside), so the README lists real values
    const extra = Object.keys(schema.properties!).filter((k) => k !== 'global' && !(k in values))
    expect(extra).toEqual([])
  })

  it('closed enums where Kubernetes or the chart accept only a few words', () => {
    expect(nodeAt(schema, ['mode'])!.enum).toEqual(['deployment', 'sidecar'])
    expect(nodeAt(schema, ['image', 'pullPolicy'])!.enum).toEqual(['Always', 'IfNotPresent', 'Never'])
    expect(nodeAt(schema, ['service', 'type'])!.enum).toEqual(['ClusterIP', 'NodePort', 'LoadBalancer'])
    expect(nodeAt(schema, ['strategy', 'type'])!.enum).toEqual(['Recreate', 'RollingUpdate'])
    expect(nodeAt(schema, ['topologySpread', 'whenUnsatisfiable'])!.enum).toEqual(['ScheduleAnyway', 'DoNotSchedule'])
  })
})

describe.skipIf(!canRender)(
  `values.schema.json enforced by the render check (as helm install/template/lint do) ${needs('go + sprig')}`,
  () => {
    it('the defaults, and both modes, pass', () => {
      expect(render({}).ok).toBe(true)
      expect(render({ mode: 'sidecar' }).ok).toBe(true)
    })

    it('refuses a typo at the top and deep down, and a wrong type, naming the key', () => {
      const cases: [Tree, string][] = [
        [{ foo: 'bar' }, '(root): Additional property foo is not allowed'],
        [{ resources: { limits: { memory: 'lots' } } }, 'resources.limits.memory'],
        [{ serviceMonitor: { enable: true } }, 'serviceMonitor: Additional property enable is not allowed'],
        [{ replicaCount: '3' }, 'replicaCount: Invalid type. Expected: [integer,null], given: string'],
        [{ ports: { proxy: 70000 } }, 'ports.proxy: Must be less than or equal to 65535'],
        [{ mode: 'daemonset' }, 'mode: mode must be one of the following: "deployment", "sidecar"'],
        [{ image: { digest: 'latest' } }, 'image.digest: Does not match pattern'],
        [
          { networkPolicy: { proxy: { from: [{ namespaceSelectr: {} }] } } },
          'networkPolicy.proxy.from.0: Additional property namespaceSelectr is not allowed',
        ],
        [{ extraEnv: [{ value: 'x' }] }, 'extraEnv.0: name is required'],
        [{ securityContext: { runAsUser: -1 } }, 'securityContext.runAsUser: Must be greater than or equal to 0'],
        [{ redis: { url: 'http://redis:6379' } }, 'redis.url: Does not match pattern'],
      ]
      for (const [bad, message] of cases) {
        const r = render(bad)
        expect(r.ok, JSON.stringify(bad)).toBe(false)
        expect(!r.ok && r.error, JSON.stringify(bad)).toContain(
          "values don't meet the specifications of the schema(s) in the following chart(s):\nsluice:",
        )
        expect(!r.ok && r.error, JSON.stringify(bad)).toContain(message)
      }
    })

    it('refuses a wrong type for every key of values.yaml, and an unknown key in every map of it', () => {
      const accepted: string[] = []
      for (const path of paths(values)) {
        if (path.length === 1 && path[0] === 'global') continue
        const r = render(setAt(path, wrongTypeFor(path)))
        if (r.ok || !r.error.includes(path.join('.')))
          accepted.push(`${path.join('.')} = ${JSON.stringify(wrongTypeFor(path))}`)
      }
      expect(accepted).toEqual([])

      const maps = [[], ...paths(values)].filter(
        (p) => isTree(p.reduce<unknown>((n, k) => (n as Tree)[k], values)) && p[0] !== 'settings',
      )
      expect(maps.length).toBeGreaterThan(20)
      const typos: string[] = []
      for (const path of maps) {
        // A map of strings (labels, annotations) takes any key: there the new key's value is of the wrong type.
        const typed = nodeAt(schema, [...path, 'zzTypo'])
        const r = render(setAt([...path, 'zzTypo'], typed ? wrongTypeFor([...path, 'zzTypo']) : 'x'))
        if (r.ok) typos.push(path.join('.') || '(root)')
      }
      expect(typos).toEqual([])
    })

    it('settings stay open to the schema, and sluice itself refuses a typo in them at start', () => {
      expect(renderOk({ settings: { logLevel: 'warn' } }).manifests.length).toBeGreaterThan(0)
    })
  },
)
