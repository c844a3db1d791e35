import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO } from './chart.js'
import { readDockerfile } from './dockerfile.js'

/**
 * The Dockerfile built for real, wherever a builder is there and can reach the base image: docker
 * (with a daemon), podman or buildah. Where none can, the test is skipped and says why on stderr
 * and in its skip note. Where this repository is developed there is no Docker daemon and no
 * registry, so the build runs only on a machine that has both (docs/deploy.md "The image").
 */

type Builder = 'docker' | 'podman' | 'buildah'
const run = (cmd: string, args: readonly string[], timeoutMs: number) =>
  spawnSync(cmd, args, { cwd: REPO, encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, DOCKER_CLI_HINTS: 'false' } })
const firstLine = (r: ReturnType<typeof run>): string => `${r.error?.message ?? ''}${r.stderr ?? ''}${r.stdout ?? ''}`.trim().split('\n')[0] ?? ''

/** The first builder that answers, or why none does. */
function findBuilder(): { builder: Builder } | { reason: string } {
  const reasons: string[] = []
  const checks: [Builder, string[]][] = [
    ['docker', ['version', '--format', '{{.Server.Version}}']],
    ['podman', ['info', '--format', '{{.Host.Arch}}']],
    ['buildah', ['info']],
  ]
  for (const [builder, args] of checks) {
    const r = run(builder, args, 20_000)
    if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
      reasons.push(`${builder}: not installed`)
      continue
    }
    if (r.status === 0) return { builder }
    reasons.push(`${builder}: ${firstLine(r)}`)
  }
  return { reason: reasons.join('; ') }
}

const found = findBuilder()
const { args } = readDockerfile()
const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }
const base = args.get('NODE_IMAGE')!

describe('the image, built', () => {
  it('builds from the Dockerfile; the image runs node dist/main.js as 1000:1000, binds 0.0.0.0 and carries the OCI labels', (ctx) => {
    const skip = (why: string): never => {
      console.warn(`image build SKIPPED: ${why}`)
      return ctx.skip(why)
    }
    if ('reason' in found) return skip(`no builder that works here (${found.reason})`)
    const { builder } = found
    const pull = run(builder, ['pull', base], 300_000)
    if (pull.status !== 0) return skip(`${builder} cannot pull the base image ${base}: ${firstLine(pull)}`)

    const tag = `localhost/sluice-build-test:${process.pid}`
    const revision = run('git', ['rev-parse', 'HEAD'], 10_000).stdout.trim() || 'unknown'
    const buildArgs = ['--build-arg', `REVISION=${revision}`, '--build-arg', `CREATED=${new Date().toISOString()}`, '-t', tag, '.']
    const build = run(builder, builder === 'buildah' ? ['build', ...buildArgs] : ['build', ...buildArgs], 540_000)
    try {
      expect(build.status, `${builder} build failed:\n${build.stdout}\n${build.stderr}`).toBe(0)
      const inspect = run(builder, builder === 'buildah' ? ['inspect', '--type', 'image', tag] : ['image', 'inspect', tag], 30_000)
      expect(inspect.status, inspect.stderr).toBe(0)
      const parsed = JSON.parse(inspect.stdout) as unknown
      const config = (builder === 'buildah'
        ? (parsed as { OCIv1: { config: ImageConfig } }).OCIv1.config
        : (parsed as { Config: ImageConfig }[])[0]!.Config)
      expect(config.User).toBe('1000:1000')
      expect(config.Cmd).toEqual(['node', 'dist/main.js'])
      expect(config.Env).toEqual(expect.arrayContaining(['SLUICE_HOST=0.0.0.0', 'SLUICE_ADMIN_HOST=0.0.0.0']))
      const labels = config.Labels ?? {}
      expect(labels['org.opencontainers.image.revision']).toBe(revision)
      expect(labels['org.opencontainers.image.version']).toBe(version)
      expect(labels['org.opencontainers.image.base.name']).toBe(base)
    } finally {
      run(builder, builder === 'buildah' ? ['rmi', tag] : ['image', 'rm', tag], 60_000)
    }
  }, 900_000)
})

interface ImageConfig {
  User?: string
  Cmd?: string[]
  Env?: string[]
  Labels?: Record<string, string>
}
