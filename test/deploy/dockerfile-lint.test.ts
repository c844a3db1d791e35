import { join } from 'node:path'
import { validate, ValidationSeverity, type ValidatorSettings } from 'dockerfile-utils'
import { describe, expect, it } from 'vitest'
import { readText, REPO } from './chart.js'
import { execForm, readDockerfile, stageKeyValues, type Stage } from './dockerfile.js'

/**
 * The Dockerfile against published rules: dockerfile-utils (the validator behind the Docker
 * language server) with every optional check raised to an error, then the hadolint rules that
 * apply to this file, checked here because no hadolint package exists on npm or Debian (rule ids
 * as hadolint names them, github.com/hadolint/hadolint#rules), plus the image's own contract: a
 * base pinned by digest and the OCI labels.
 */

const text = readText(join(REPO, 'Dockerfile'))
const { args, stages } = readDockerfile()
const runtime = stages.at(-1)!
const ops = (stage: Stage, op: string): string[] => stage.instructions.filter((i) => i.op === op).map((i) => i.args)
const allRuns = stages.flatMap((s) => ops(s, 'RUN'))

const strict: ValidatorSettings = {
  deprecatedMaintainer: ValidationSeverity.ERROR,
  directiveCasing: ValidationSeverity.ERROR,
  emptyContinuationLine: ValidationSeverity.ERROR,
  instructionCasing: ValidationSeverity.ERROR,
  instructionCmdMultiple: ValidationSeverity.ERROR,
  instructionEntrypointMultiple: ValidationSeverity.ERROR,
  instructionHealthcheckMultiple: ValidationSeverity.ERROR,
  instructionJSONInSingleQuotes: ValidationSeverity.ERROR,
  instructionWorkdirRelative: ValidationSeverity.ERROR,
}
const problems = (dockerfile: string): string[] =>
  validate(dockerfile, strict).map(
    (d) => `line ${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`,
  )

describe('Dockerfile against dockerfile-utils', () => {
  it('has no problem, with every optional check an error', () => {
    expect(problems(text)).toEqual([])
  })

  it('the validator does flag a broken file (so the clean result above means something)', () => {
    const broken = problems(
      'from node:22\nMAINTAINER me\nWORKDIR app\nEXPOSE 99999\nCMD node a.js\nCMD node b.js\nHEALTHCHECK --interval=x CMD true\n',
    )
    expect(broken.length).toBeGreaterThanOrEqual(5)
  })
})

describe('Dockerfile against hadolint rules (checked here) and the image contract', () => {
  it('pins every base image by digest, never :latest (DL3006, DL3007, stricter: a digest)', () => {
    const stageNames = new Set(stages.map((s) => s.name).filter(Boolean))
    // `scratch` is no image: the runtime stage starts empty (no npm, no shell) and takes node from the pinned one
    const bases = stages.map((s) => s.from).filter((f) => !stageNames.has(f) && f !== 'scratch')
    expect(bases.length).toBeGreaterThan(0)
    for (const base of bases) {
      expect(base, 'official Node LTS on Debian slim, by digest').toMatch(
        /^node:(22|24)(\.\d+)*-(bookworm|trixie)-slim@sha256:[0-9a-f]{64}$/,
      )
      expect(base).not.toMatch(/:latest\b/)
    }
    expect(args.get('NODE_IMAGE')).toBe(bases[0]) // one ARG, so every stage runs the same Node
    expect(new Set(bases).size).toBe(1)
  })

  it('the comment above the pin says where the digest came from and how to refresh it', () => {
    const comment = text.slice(0, text.indexOf('ARG NODE_IMAGE='))
    expect(comment).toContain('docker buildx imagetools inspect node:22-bookworm-slim')
    expect(comment).toMatch(/public Dockerfiles pinned/)
  })

  it('runs as a numeric non-root user (DL3002) and CMD/ENTRYPOINT in JSON form (DL3025)', () => {
    const user = ops(runtime, 'USER').at(-1)
    expect(user).toMatch(/^[1-9][0-9]*:[1-9][0-9]*$/)
    for (const s of stages)
      for (const c of [...ops(s, 'CMD'), ...ops(s, 'ENTRYPOINT')]) expect(execForm(c), c).toBeDefined()
  })

  it('COPY rather than ADD (DL3020), no `cd` in RUN (DL3003), absolute WORKDIR before relative COPYs (DL3000, DL3045)', () => {
    for (const s of stages) {
      expect(ops(s, 'ADD')).toEqual([])
      for (const w of ops(s, 'WORKDIR')) expect(w).toMatch(/^\//)
      const firstCopy = s.instructions.findIndex((i) => i.op === 'COPY')
      const firstWorkdir = s.instructions.findIndex((i) => i.op === 'WORKDIR')
      if (firstCopy >= 0) expect(firstWorkdir, `${s.name ?? 'runtime'}: WORKDIR before COPY`).toBeGreaterThanOrEqual(0)
      if (firstCopy >= 0) expect(firstWorkdir).toBeLessThan(firstCopy)
    }
    for (const run of allRuns) expect(run).not.toMatch(/(^|&&|;)\s*cd\s/)
  })

  it('installs from the lockfile only (npm ci, never npm install: the counterpart of DL3016), and no apt-get without --no-install-recommends (DL3015)', () => {
    expect(allRuns.some((r) => /\bnpm ci\b/.test(r))).toBe(true)
    for (const run of allRuns) {
      expect(run).not.toMatch(/\bnpm (install|i)\b/)
      if (/apt-get install/.test(run)) expect(run).toMatch(/--no-install-recommends/)
    }
  })

  it('has a HEALTHCHECK (DL3057) and a STOPSIGNAL that sluice handles', () => {
    expect(ops(runtime, 'HEALTHCHECK')).toHaveLength(1)
    expect(ops(runtime, 'STOPSIGNAL')).toEqual(['SIGTERM'])
  })

  it('carries the OCI labels, version and revision from build args', () => {
    const labels = stageKeyValues(runtime, 'LABEL')
    for (const key of ['title', 'description', 'version', 'revision', 'created', 'licenses', 'base.name']) {
      expect(labels.get(`org.opencontainers.image.${key}`), key).toBeTruthy()
    }
    expect(labels.get('org.opencontainers.image.version')).toBe('${VERSION}')
    expect(labels.get('org.opencontainers.image.revision')).toBe('${REVISION}')
    const pkg = JSON.parse(readText(join(REPO, 'package.json'))) as { version: string; license: string }
    expect(ops(runtime, 'ARG')).toContain(`VERSION=${pkg.version}`)
    expect(labels.get('org.opencontainers.image.licenses')).toBe(pkg.license)
  })

  it("binds both ports on every interface in the container (sluice's own defaults are loopback)", () => {
    const env = stageKeyValues(runtime, 'ENV')
    expect(env.get('SLUICE_HOST')).toBe('0.0.0.0')
    expect(env.get('SLUICE_ADMIN_HOST')).toBe('0.0.0.0')
    expect(env.get('NODE_ENV')).toBe('production')
  })
})
