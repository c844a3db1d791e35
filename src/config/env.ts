import type { z } from 'zod'

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

// zod 4 keeps a schema's definition in `_zod.def`; only the few fields we walk are typed here.
interface Def {
  type: string
  shape?: Record<string, z.ZodType>
  innerType?: z.ZodType
  in?: z.ZodType
}
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def

/** Strips default/optional/prefault/pipe wrappers down to the schema that says what the value is. */
function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema
  for (;;) {
    const def = defOf(s)
    if (def.innerType && ['default', 'optional', 'prefault', 'nullable', 'readonly'].includes(def.type)) s = def.innerType
    else if (def.type === 'pipe' && def.in) s = def.in
    else return s
  }
}

export function envBindings(schema: z.ZodType, path: string[] = []): EnvBinding[] {
  const s = unwrap(schema)
  const def = defOf(s)
  if (def.type === 'object' && def.shape) {
    return Object.entries(def.shape).flatMap(([key, child]) => envBindings(child, [...path, key]))
  }
  const kind: Kind =
    def.type === 'number' || def.type === 'int'
      ? 'number'
      : def.type === 'boolean'
        ? 'boolean'
        : def.type === 'string' || def.type === 'enum' || def.type === 'literal'
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
