import { send } from '../../support/http.js'
import { basicAuth, type Sim } from '../../support/sim.js'

export const MEMBERSHIPS = 'GET /accounts/{id}/memberships'

let seq = 0

/**
 * `loops` closed-loop clients of one organisation, each sending `perLoop` GETs of `path` (another
 * account each time, so identical reads never share a call) through the given proxies in turn.
 * Resolves with every status the clients got.
 */
export async function drive(
  urls: readonly string[],
  org: string,
  loops: number,
  perLoop: number,
  path = (n: number) => `/v2/accounts/${n}/memberships`,
): Promise<number[]> {
  const statuses: number[] = []
  await Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      const url = urls[i % urls.length]!
      for (let j = 0; j < perLoop; j++)
        statuses.push((await send(url, path(++seq), { headers: { authorization: basicAuth(org) } })).status)
    }),
  )
  return statuses
}

export interface Change {
  readonly time: number
  readonly instance: string
  readonly endpoint: string
  readonly from: number
  readonly to: number
  readonly reason: string
}

/** The learned-limit changes among log lines (objects, or JSON text lines), oldest first. */
export function changesIn(lines: readonly (Record<string, unknown> | string)[]): Change[] {
  const out: Change[] = []
  for (const line of lines) {
    let o: Record<string, unknown>
    if (typeof line === 'string') {
      if (!line.includes('learned limit')) continue
      o = JSON.parse(line) as Record<string, unknown>
    } else o = line
    if (typeof o.msg !== 'string' || !o.msg.includes('learned limit')) continue
    out.push({
      time: Number(o.time),
      instance: String(o.instance),
      endpoint: String(o.endpoint),
      from: Number(o.from),
      to: Number(o.to),
      reason: String(o.reason),
    })
  }
  return out.sort((a, b) => a.time - b.time)
}

/** The limit the last change of one organisation's key left (undefined: never changed). */
export function lastLimit(changes: readonly Change[], org: string, endpoint = MEMBERSHIPS): number | undefined {
  return changes.filter((c) => c.instance === org && c.endpoint === endpoint).at(-1)?.to
}

/** The sim's figures of one key since its last reset: the share of attempts answered 429, most admitted and most tried at once. */
export function judged(
  sim: Sim,
  org: string,
  endpoint = MEMBERSHIPS,
): { share429: number; maxInProgress: number; maxAttempted: number; requests: number } {
  const s = sim.stats().keys[`${org} ${endpoint}`]
  if (s === undefined) return { share429: 0, maxInProgress: 0, maxAttempted: 0, requests: 0 }
  return {
    share429: s.rejected429 / Math.max(1, s.requests),
    maxInProgress: s.maxInProgress,
    maxAttempted: s.maxAttempted,
    requests: s.requests,
  }
}
