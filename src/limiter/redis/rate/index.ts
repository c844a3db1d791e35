import type { GcraParams, Reservation } from '../../rate/gcra.js'
import type { ScriptDef, ScriptRunner } from '../script.js'
import { RATE_LUA } from './lua.js'

export const RATE_SCRIPT: ScriptDef = { name: 'rate', numberOfKeys: 1, lua: RATE_LUA }

/** A reservation, and how long until the next start free after it (for `/status`). */
export interface RedisReservation extends Reservation {
  readonly nextFreeMs: number
  /** `verify` was asked and the key is missing: nothing reserved, ask whether Redis lost its data (rateEpoch) */
  readonly missing?: true
}

/**
 * `lostMs` > 0: this replica took a start on the key less than a window ago, so a key Redis no longer has
 * was lost (a flush, a failover to an empty replica): nobody starts for `lostMs` (docs/redis-limiter.md, "Rates").
 */
export async function reserveStart(
  scripts: ScriptRunner,
  key: string,
  p: GcraParams,
  maxWaitMs: number,
  lostMs = 0,
  verify = false,
  waiter = '',
): Promise<RedisReservation> {
  const wait = Math.max(0, Math.floor(maxWaitMs))
  const reply = (await scripts.run(
    RATE_SCRIPT,
    [key],
    ['r', p.intervalMs, p.toleranceMs, wait, p.windowMs, Math.ceil(lostMs), p.log ?? 0, verify ? 1 : 0, waiter],
  )) as [number, number, number, number, number?]
  if (Number(reply[4] ?? 0) === 1) return { delayMs: 0, granted: false, nextFreeMs: 0, missing: true }
  const granted = Number(reply[1]) === 1
  return {
    delayMs: Number(reply[0]),
    granted,
    nextFreeMs: Number(reply[2]),
    ...(granted ? { tat: Number(reply[3]) } : {}),
  }
}

/** An accepted start of a key whose rate is being learned, in per-bucket counts over `windowMs`. */
export async function countAccepted(scripts: ScriptRunner, key: string, windowMs: number): Promise<void> {
  await scripts.run(RATE_SCRIPT, [key], ['c', Math.ceil(windowMs), acceptBucketMs(windowMs)])
}

/** The accepted starts counted within the last `windowMs`. */
export async function acceptedWithin(scripts: ScriptRunner, key: string, windowMs: number): Promise<number> {
  return Number(await scripts.run(RATE_SCRIPT, [key], ['k', Math.ceil(windowMs), 0]))
}

/** Counts are kept per bucket of a hundredth of the window (at least 10 ms): ~100 numbers per key. */
const acceptBucketMs = (windowMs: number): number => Math.max(10, Math.ceil(windowMs / 100))

/** A waiter leaves without a start: out of the key's order of waiters (field `sq`). */
export async function leaveStarts(scripts: ScriptRunner, key: string, waiter: string): Promise<void> {
  await scripts.run(RATE_SCRIPT, [key], ['q', waiter])
}

/** The prefix's rate epoch (`<prefix>:{global}:rate-epoch`), made with `id` and `kind` when missing. */
export interface RateEpoch {
  readonly id: string
  /** `lost`: made by a replica that found a key missing (Redis lost its data); `fresh`: at a start-up */
  readonly kind: string
  /** how long ago it was made (Redis's clock) */
  readonly ageMs: number
}

export async function rateEpoch(scripts: ScriptRunner, key: string, id: string, kind: string): Promise<RateEpoch> {
  const [got = '', gotKind = '', at = '0', now = '0'] = (await scripts.run(
    RATE_SCRIPT,
    [key],
    ['e', id, kind],
  )) as string[]
  return { id: String(got), kind: String(gotKind), ageMs: Number(now) - Number(at) }
}

export async function giveStartBack(scripts: ScriptRunner, key: string, p: GcraParams, tat: number): Promise<void> {
  await scripts.run(RATE_SCRIPT, [key], ['g', p.intervalMs, tat, p.log ?? 0])
}

/** A channel and a message the script publishes once it has written the state: every replica hears of it. */
export interface News {
  readonly channel: string
  readonly message: string
}

const told = (news: News | undefined): string[] => (news === undefined ? [] : [news.channel, news.message])

export async function holdStarts(
  scripts: ScriptRunner,
  key: string,
  forMs: number,
  p: GcraParams,
  news?: News,
): Promise<void> {
  await scripts.run(RATE_SCRIPT, [key], ['h', Math.ceil(forMs), p.toleranceMs, ...told(news)])
}

export async function shareLearnedRate(
  scripts: ScriptRunner,
  key: string,
  p: GcraParams,
  ttlMs: number,
  news?: News,
): Promise<void> {
  const [channel = '', message = ''] = told(news)
  await scripts.run(
    RATE_SCRIPT,
    [key],
    ['l', p.intervalMs, p.toleranceMs, Math.ceil(ttlMs), channel, message, p.log ?? 0, p.windowMs],
  )
}

/** Starts the API counted that the gate did not: `added` more, and at least `used` (RateGate.sync). */
export async function syncStarts(
  scripts: ScriptRunner,
  key: string,
  p: GcraParams,
  used: number,
  added: number,
): Promise<void> {
  const whole = (v: number): number => Math.max(0, Math.floor(v))
  await scripts.run(RATE_SCRIPT, [key], ['u', p.intervalMs, p.windowMs, p.log ?? 0, whole(used), whole(added)])
}
