import { z } from 'zod'

/**
 * Env vars for every leaf of the settings schema: `queue.maxWaitMs` ↔ `SLUICE_QUEUE_MAX_WAIT_MS`.
 * Derived from the schema, so a new setting gets its env var without a second list to keep in step.
 */

type Kind = 'string' | 'number' | 'boolean' | 'json'
export interface EnvBinding {
  readonly name: string
  readonly path: readonly string[]
  readonly kind: Kind
}

export const ENV_PREFIX = 'SLUICE_'

const toSnake = (s: string): string => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()

/** Strips default/optional/prefault/pipe wrappers down to the schema that says what the value is. */
function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema
  for (;;) {
    if (s instanceof z.ZodDefault || s instanceof z.ZodPrefault || s instanceof z.ZodOptional || s instanceof z.ZodNullable || s instanceof z.ZodReadonly) {
      s = s.unwrap() as z.ZodType
    } else if (s instanceof z.ZodPipe) s = s.in as z.ZodType
    else return s
  }
}

/** Every leaf of the schema with its env var name, walked through zod's public classes (test/config/env-bindings.test.ts pins the result). */
export function envBindings(schema: z.ZodType, path: string[] = []): EnvBinding[] {
  const s = unwrap(schema)
  if (s instanceof z.ZodObject) {
    return Object.entries(s.shape as Record<string, z.ZodType>).flatMap(([key, child]) => envBindings(child, [...path, key]))
  }
  // `type` is the public name of a schema's kind; string formats such as z.url() report 'string'.
  const kind: Kind =
    s.type === 'number' || s.type === 'int'
      ? 'number'
      : s.type === 'boolean'
        ? 'boolean'
        : s.type === 'string' || s.type === 'enum' || s.type === 'literal'
          ? 'string'
          : 'json'
  return [{ name: ENV_PREFIX + path.map(toSnake).join('_'), path, kind }]
}

/** Turns an env var's text into the value its setting expects; leaves validation to the schema. */
export function parseEnvValue(kind: Kind, raw: string): unknown {
  switch (kind) {
    case 'string':
      return raw
    case 'number': {
      // Text that is no number stays text, so the error shows what was given (not "NaN").
      const n = Number(raw)
      return raw.trim() === '' || Number.isNaN(n) ? raw : n
    }
    case 'boolean':
      return raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : raw
    case 'json':
      try {
        return JSON.parse(raw) as unknown
      } catch {
        return raw
      }
  }
}
