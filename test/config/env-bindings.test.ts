import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { envBindings } from '../../src/config/env.js'
import { settingsSchema } from '../../src/config/schema.js'

/**
 * Env vars are derived from the settings schema by walking it through zod's public classes
 * (ZodObject.shape, unwrap(), ZodPipe.in, `type`). If a zod upgrade changed what those report,
 * a setting would silently lose its env var or be parsed as the wrong kind; this pins every wrapper
 * and leaf kind the settings use.
 */
describe('env bindings derived from a zod schema', () => {
  it('unwraps every wrapper the settings use and reads each leaf kind', () => {
    const schema = z.strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).default(8080),
      ratio: z.int().optional(),
      upstream: z.url().default('https://example.test/v2'),
      day: z.iso.date().nullable(),
      header: z
        .string()
        .transform((s) => s.toLowerCase())
        .default('x-a'),
      level: z.enum(['info', 'debug']).default('info'),
      mode: z.literal('only').readonly(),
      on: z.boolean().default(true),
      overrides: z.record(z.string(), z.number()).default({}),
      nested: z.strictObject({ deeperMs: z.number().default(1), fooBarBaz: z.string().optional() }).prefault({}),
    })
    expect(envBindings(schema).map((b) => [b.name, b.path.join('.'), b.kind])).toEqual([
      ['SLUICE_HOST', 'host', 'string'],
      ['SLUICE_PORT', 'port', 'number'],
      ['SLUICE_RATIO', 'ratio', 'number'],
      ['SLUICE_UPSTREAM', 'upstream', 'string'],
      ['SLUICE_DAY', 'day', 'string'],
      ['SLUICE_HEADER', 'header', 'string'],
      ['SLUICE_LEVEL', 'level', 'string'],
      ['SLUICE_MODE', 'mode', 'string'],
      ['SLUICE_ON', 'on', 'boolean'],
      ['SLUICE_OVERRIDES', 'overrides', 'json'],
      ['SLUICE_NESTED_DEEPER_MS', 'nested.deeperMs', 'number'],
      ['SLUICE_NESTED_FOO_BAR_BAZ', 'nested.fooBarBaz', 'string'],
    ])
  })

  it('the real settings: one binding per leaf, with the kinds their values need', () => {
    const byName = new Map(envBindings(settingsSchema).map((b) => [b.name, b.kind]))
    expect(byName.get('SLUICE_PORT')).toBe('number')
    expect(byName.get('SLUICE_UPSTREAM')).toBe('string')
    expect(byName.get('SLUICE_QUEUE_WAIT_HEADER')).toBe('string')
    expect(byName.get('SLUICE_REDIS_URL')).toBe('string')
    expect(byName.get('SLUICE_REQUEST_LOG')).toBe('boolean')
    expect(byName.get('SLUICE_LIMITS_OVERRIDES')).toBe('json')
    expect(byName.get('SLUICE_VERSIONS_RETIREMENTS')).toBe('json')
    // no object is left as a leaf: a nested group would otherwise become one JSON env var
    expect([...byName.keys()]).not.toContain('SLUICE_QUEUE')
    expect([...byName.keys()]).not.toContain('SLUICE_REDIS')
  })
})
