import { Registry } from 'prom-client'
import { createVersioning, parseCalendar, type Versioning } from '../../src/versioning/index.js'
import { versionSettingsSchema } from '../../src/versioning/settings.js'
import type { z } from 'zod'

export interface LogLine {
  readonly level: 'info' | 'warn' | 'error'
  readonly obj: object
  readonly msg: string
}

export interface Harness {
  readonly versioning: Versioning
  readonly registry: Registry
  readonly logs: LogLine[]
  /** moves the injected clock */
  setNow(iso: string): void
}

/**
 * A versioning with the clock at `iso`, its logs captured and metrics on a fresh registry, over the
 * shipped calendar (or `calendarYaml`).
 */
export function versioningAt(
  iso: string,
  settings: z.input<typeof versionSettingsSchema> = {},
  calendarYaml?: string,
): Harness {
  let now = new Date(iso)
  const logs: LogLine[] = []
  const line = (level: LogLine['level']) => (obj: object, msg: string) => void logs.push({ level, obj, msg })
  const registry = new Registry()
  const versioning = createVersioning(versionSettingsSchema.parse(settings), {
    now: () => now,
    log: { info: line('info'), warn: line('warn'), error: line('error') },
    registry,
    ...(calendarYaml !== undefined ? { calendar: parseCalendar(calendarYaml, 'test-calendar.yaml') } : {}),
  })
  return { versioning, registry, logs, setNow: (next) => void (now = new Date(next)) }
}

/** An endpoint the API description gives no version: never gated. */
export const PLAIN = { id: 'GET /accounts/{id}/contacts' } as const
/** Endpoints §9 dates (as config/endpoints.yaml records them). */
export const CUSTOM_OBJECTS = { id: 'GET /customObjects', since: '2.10' } as const
export const VOLUNTEERS = { id: 'GET /volunteers', since: '2.9' } as const

export interface LocalAnswer {
  readonly code: string
  readonly statusCode: number
  readonly message: string
}

/** Runs `fn`, which must throw a local answer (a @fastify/error value), and returns what the client would get. */
export function answerOf(fn: () => unknown): LocalAnswer {
  try {
    fn()
  } catch (err) {
    const e = err as Partial<LocalAnswer>
    if (typeof e.code === 'string' && typeof e.statusCode === 'number' && typeof e.message === 'string') {
      return { code: e.code, statusCode: e.statusCode, message: e.message }
    }
    throw err
  }
  throw new Error('expected a local answer (a thrown error), got a decision')
}
