import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseAllDocuments, stringify } from 'yaml'
import { CHART_DIR, isTree, REPO, type Tree } from './chart.js'
import { has } from '../support/tools.js'

/**
 * Renders the chart with test/deploy/helm-render (Go's text/template + sprig, as Helm does), built
 * from Debian's golang-go, golang-github-masterminds-sprig-dev, golang-k8s-sigs-yaml-dev and
 * golang-github-xeipuuv-gojsonschema-dev (values.schema.json, checked as Helm 3 does). Where those
 * are not installed the render tests are skipped; `helm` itself is used where it exists.
 */

const GOPATH = '/usr/share/gocode'
// the Go libraries are found under GOPATH (test/support/tools.ts, 'go + sprig')
export const canRender = has('go + sprig')
export const hasHelm = has('helm')

let binary: string | undefined
function renderer(): string {
  if (binary) return binary
  const out = join(mkdtempSync(join(tmpdir(), 'sluice-helm-render-')), 'helm-render')
  execFileSync('go', ['build', '-o', out, './test/deploy/helm-render'], {
    cwd: REPO,
    env: { ...process.env, GO111MODULE: 'off', GOPATH, GOFLAGS: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  return (binary = out)
}

export interface Manifest extends Tree {
  kind: string
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string>; namespace?: string }
}
export type Rendered = { ok: true; manifests: Manifest[]; notes: string } | { ok: false; error: string }

export interface RenderOptions {
  /** a parent chart's template rendered with `.Values.sluice` = this chart's values */
  readonly parent?: string
  readonly chartDir?: string
  readonly release?: string
  /** the cluster's version, as `helm template --kube-version` (default v1.30.0) */
  readonly kubeVersion?: string
}

/**
 * Renders the chart. Values without `adminToken` get `adminToken.open: true`, which shared egress
 * requires without a token (docs/deploy.md, "Shared egress"): the tests of other things need no
 * Secret; `test/deploy/chart-policies.test.ts` renders without it and sees the refusal.
 */
export function render(values: Tree = {}, options: RenderOptions = {}): Rendered {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-values-'))
  const valuesFile = join(dir, 'values.yaml')
  writeFileSync(valuesFile, stringify('adminToken' in values ? values : { ...values, adminToken: { open: true } }))
  const args = [
    '-chart',
    options.chartDir ?? CHART_DIR,
    '-release',
    options.release ?? 'egress',
    '-namespace',
    'crm',
    '-f',
    valuesFile,
  ]
  if (options.kubeVersion !== undefined) args.push('-kube-version', options.kubeVersion)
  if (options.parent !== undefined) {
    const parentFile = join(dir, 'app-deployment.yaml')
    writeFileSync(parentFile, options.parent)
    args.push('-parent', parentFile)
  }
  const run = spawnSync(renderer(), args, { encoding: 'utf8' })
  if (run.status !== 0) return { ok: false, error: run.stderr }
  const [manifestsText, notes = ''] = `\n${run.stdout}`.split('\n---\n# NOTES\n')
  const manifests: Manifest[] = []
  for (const doc of parseAllDocuments(manifestsText!)) {
    if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors[0]!.message}\n${run.stdout}`)
    const value = doc.toJS() as unknown
    if (value === null) continue
    if (!isTree(value) || typeof value.kind !== 'string')
      throw new Error(`rendered document without a kind:\n${String(doc)}`)
    manifests.push(value as Manifest)
  }
  return { ok: true, manifests, notes }
}

/** Renders, failing the test with helm-render's message if the render fails. */
export function renderOk(values: Tree = {}, options: RenderOptions = {}): { manifests: Manifest[]; notes: string } {
  const r = render(values, options)
  if (!r.ok) throw new Error(`render failed:\n${r.error}`)
  return r
}

export const kinds = (manifests: readonly Manifest[]): string[] => manifests.map((m) => m.kind).sort()
export function only(manifests: readonly Manifest[], kind: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind)
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`)
  return found[0]!
}
