import type { GcraParams, Reservation } from '../../rate/gcra.js'
import type { ScriptDef, ScriptRunner } from '../script.js'
import { RATE_LUA } from './lua.js'

export const RATE_SCRIPT: ScriptDef = { name: 'rate', numberOfKeys: 1, lua: RATE_LUA }

/** A reservation, and how long until the next start free after it (for `/status`). */
export interface RedisReservation extends Reservation {
  readonly nextFreeMs: number
}

export async function reserveStart(
  scripts: ScriptRunner,
  key: string,
  p: GcraParams,
  maxWaitMs: number,
): Promise<RedisReservation> {
  const reply = (await scripts.run(
    RATE_SCRIPT,
    [key],
    ['r', p.intervalMs, p.toleranceMs, Math.max(0, Math.floor(maxWaitMs))],
  )) as [number, number, number]
  return { delayMs: Number(reply[0]), granted: Number(reply[1]) === 1, nextFreeMs: Number(reply[2]) }
}

export async function holdStarts(scripts: ScriptRunner, key: string, forMs: number, p: GcraParams): Promise<void> {
  await scripts.run(RATE_SCRIPT, [key], ['h', Math.ceil(forMs), p.toleranceMs])
}

export async function shareLearnedRate(
  scripts: ScriptRunner,
  key: string,
  p: GcraParams,
  ttlMs: number,
): Promise<void> {
  await scripts.run(RATE_SCRIPT, [key], ['l', p.intervalMs, p.toleranceMs, Math.ceil(ttlMs)])
}
