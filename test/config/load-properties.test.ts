import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { envBindings } from '../../src/config/env.js'
import { loadSettings } from '../../src/config/load.js'
import { ConfigError } from '../../src/errors/config-error.js'
import { settingsSchema } from '../../src/config/schema.js'

// Property tests of the config loader (README "Settings"): whatever the env vars and the file hold,
// either settings come back or a ConfigError that names the bad key — never another error.

const bindings = envBindings(settingsSchema)
const dir = mkdtempSync(join(tmpdir(), 'sluice-config-props-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const envValue = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.integer().map(String),
  fc.double().map(String),
  fc.constantFrom('true', 'false', '0', '1', '', ' ', '{}', '[]', 'null', '-1', '1e309', '{"GET /accounts": 2}'),
)

function loadOrConfigError(run: () => unknown): ConfigError | undefined {
  try {
    run()
    return undefined
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return err as ConfigError
  }
}

describe('the config loader: properties', () => {
  it('any value in any env var: settings, or a ConfigError naming that env var', () => {
    fc.assert(
      fc.property(fc.constantFrom(...bindings), envValue, (binding, value) => {
        const err = loadOrConfigError(() => loadSettings({ [binding.name]: value }))
        if (err !== undefined) expect(err.message).toContain(binding.name)
      }),
      { numRuns: 2_000 },
    )
  })

  it('any YAML document as the file: settings, or a ConfigError', () => {
    let n = 0
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.dictionary(fc.constantFrom(...bindings.map((b) => b.path[0]!)), fc.anything())), (doc) => {
        const file = join(dir, `c${n++}.yaml`)
        writeFileSync(file, stringify(doc) ?? '')
        loadOrConfigError(() => loadSettings({ SLUICE_CONFIG: file }))
      }),
      { numRuns: 200 },
    )
  })

  it('any text as the file, valid YAML or not: settings, or a ConfigError', () => {
    let n = 0
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const file = join(dir, `t${n++}.yaml`)
        writeFileSync(file, text)
        loadOrConfigError(() => loadSettings({ SLUICE_CONFIG: file }))
      }),
      { numRuns: 200 },
    )
  })

  it('a whole number within range round-trips through its env var', () => {
    const numeric = bindings.filter((b) => b.kind === 'number')
    fc.assert(
      fc.property(fc.constantFrom(...numeric), fc.integer({ min: 1, max: 65_535 }), (binding, value) => {
        let settings
        try {
          settings = loadSettings({ [binding.name]: String(value) })
        } catch (err) {
          // some settings have their own bounds (a minimum size, a port range): refused by name
          expect((err as Error).message).toContain(binding.name)
          return
        }
        const read = binding.path.reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], settings)
        expect(read).toBe(value)
      }),
      { numRuns: 1_000 },
    )
  })
})
