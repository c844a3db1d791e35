/**
 * `npm run soak [-- --duration 120 --seed 42 --lease-ms 1000]`: three sluice replicas (dist/main.js)
 * on one redis-server of their own, in front of the sim, all on loopback; client loops on mixed keys;
 * faults drawn from the seed (a replica frozen or killed and started again, Redis restarted with or
 * without its data, SCRIPT FLUSH, the pub/sub connections killed). Stops by itself, prints a table,
 * exits 1 when the goal is missed: 0 requests over a limit, nothing leaked, RSS flat (docs/faults.md).
 */
import { parseArgs } from 'node:util'
import { killPubSub, leftovers, scriptFlush, simNow, verdict, type Window } from '../../test/support/faults.js'
import { ClientLoops, loopsOver, route, type Route } from '../../test/support/load.js'
import { startReplicaStack, type ReplicaStack } from '../../test/support/stack.js'
import { drawSchedule, FAULT_KINDS, type Fault, type FaultKind } from './schedule.js'

const MiB = 1024 * 1024
/** RSS may grow this much over a run (heap warm-up, allocator slack) and still count as flat */
const RSS_SLACK = { ratio: 0.25, bytes: 16 * MiB }

const ROUTES: readonly Route[] = [
  route('1001', 'POST', '/v2/accounts/search', 'POST /accounts/search', 1),
  route('1001', 'GET', '/v2/donations/7', 'GET /donations/{id}', 5),
  route('1002', 'POST', '/v2/events/search', 'POST /events/search', 1),
  route('1002', 'GET', '/v2/accounts/9/donations', 'GET /accounts/{id}/donations', 5),
  route('1003', 'POST', '/v2/donations/search', 'POST /donations/search', 1),
]

function options(): { durationMs: number; seed: number; leaseMs: number } {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '120' },
      seed: { type: 'string' },
      'lease-ms': { type: 'string', default: '1000' },
    },
  })
  const whole = (name: string, text: string, min: number, max: number): number => {
    const n = Number(text)
    if (!Number.isInteger(n) || n < min || n > max) {
      console.error(`soak: --${name} must be a whole number from ${min} to ${max}, not ${JSON.stringify(text)}`)
      process.exit(64)
    }
    return n
  }
  return {
    durationMs: whole('duration', values.duration, 10, 3_600) * 1_000,
    seed: values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : whole('seed', values.seed, 0, 2 ** 31 - 1),
    leaseMs: whole('lease-ms', values['lease-ms'], 500, 10_000),
  }
}

interface ReplicaSlot {
  pids: number[]
  rssStart: number | undefined
  rssEnd: number | undefined
}

/** each fault as it began, on the sim's clock, for a run that missed the goal */
const marks: string[] = []

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

async function inject(
  stack: ReplicaStack,
  loops: ClientLoops,
  fault: Fault,
  leaseMs: number,
  windows: Window[],
  slots: ReplicaSlot[],
): Promise<void> {
  const sim = stack.sim
  marks.push(
    `${Math.round(simNow(sim))} ${fault.kind}${fault.kind === 'freeze' || fault.kind === 'kill-restart' ? ` replica ${fault.replica}` : ''}`,
  )
  switch (fault.kind) {
    case 'freeze': {
      const replica = stack.replicas[fault.replica]!
      replica.freeze()
      await sleep(fault.leases * leaseMs)
      replica.thaw()
      return
    }
    case 'kill-restart': {
      loops.replicaKilled(stack.replicas[fault.replica]!.pid)
      const next = await stack.restartReplica(fault.replica)
      const slot = slots[fault.replica]!
      slot.pids.push(next.pid)
      slot.rssStart = undefined // a new process: its start is measured once it warmed up
      setTimeout(() => (slot.rssStart ??= next.rssBytes()), 3 * leaseMs).unref()
      return
    }
    case 'redis-restart':
    case 'redis-restart-empty': {
      // judged from one lease after Redis is back: the `local` fallback may go over meanwhile by design
      const downAt = simNow(sim)
      await stack.redis.stop({ keepData: fault.kind === 'redis-restart' })
      await sleep(fault.leases * leaseMs)
      await stack.redis.start()
      windows.push({ fromMs: downAt, toMs: simNow(sim) + leaseMs })
      return
    }
    case 'script-flush':
      await scriptFlush(stack.redis)
      return
    case 'pubsub-kill':
      await killPubSub(stack.redis)
      return
  }
}

/** The sim's 429s while Redis was away, and within the lease after it was back (each window ends there). */
function limitedAround(sim: ReplicaStack['sim'], windows: readonly Window[], leaseMs: number) {
  const limited = sim.stats().arrivals.filter((a) => a.outcome === 'limited')
  const count = (from: (w: Window) => number, to: (w: Window) => number): number =>
    limited.filter((a) => windows.some((w) => a.atMs >= from(w) && a.atMs <= to(w))).length
  return {
    during: count(
      (w) => w.fromMs,
      (w) => w.toMs - leaseMs,
    ),
    after: count(
      (w) => w.toMs - leaseMs + 1e-9,
      (w) => w.toMs,
    ),
  }
}

async function main(): Promise<number> {
  const { durationMs, seed, leaseMs } = options()
  const started = new Date()
  // the run stops by itself: a watchdog for a teardown that hangs
  const watchdog = setTimeout(() => {
    console.error('soak: did not finish in time; stopping')
    process.exit(2)
  }, durationMs + 180_000)
  watchdog.unref()

  console.log(`soak: ${durationMs / 1000} s, seed ${seed}, lease ${leaseMs} ms, ${new Date().toISOString()}`)
  const stack = await startReplicaStack({
    prefixName: 'soak',
    sim: { latencyMs: 20, jitterMs: 20, arrivalLogSize: 2_000_000 },
    env: { SLUICE_REDIS_LEASE_MS: String(leaseMs) },
  })
  try {
    const slots: ReplicaSlot[] = stack.replicas.map((r) => ({ pids: [r.pid], rssStart: undefined, rssEnd: undefined }))
    const loops = new ClientLoops(stack.replicas, loopsOver(ROUTES, 8, stack.replicas.length))
    const begin = Date.now()
    loops.start()
    setTimeout(() => stack.replicas.forEach((r, i) => (slots[i]!.rssStart ??= r.rssBytes())), 3 * leaseMs).unref()

    const windows: Window[] = []
    const injected = new Map<FaultKind, number>(FAULT_KINDS.map((k) => [k, 0]))
    // no fault in the last few leases: the run ends judged on a quiet stretch
    const schedule = drawSchedule({ seed, spanMs: durationMs - 6 * leaseMs, leaseMs, replicas: stack.replicas.length })
    for (const fault of schedule) {
      const wait = begin + fault.atMs - Date.now()
      if (wait > 0) await sleep(wait)
      if (Date.now() - begin > durationMs - 6 * leaseMs) break
      await inject(stack, loops, fault, leaseMs, windows, slots)
      injected.set(fault.kind, injected.get(fault.kind)! + 1)
    }
    const rest = begin + durationMs - Date.now()
    if (rest > 0) await sleep(rest)

    const figures = await loops.stop(60_000)
    // what is left must be gone within a few leases: after that, it leaked
    let left = await leftovers(stack)
    const until = Date.now() + 5 * leaseMs
    while ((left.holders > 0 || left.queued > 0) && Date.now() < until) {
      await sleep(100)
      left = await leftovers(stack)
    }
    stack.replicas.forEach((r, i) => (slots[i]!.rssEnd = r.rssBytes()))
    const verdicts = verdict(stack.sim, ROUTES, windows)
    const away = limitedAround(stack.sim, windows, leaseMs)

    const requests = figures.sent
    const non200 = Object.entries(figures.statuses).filter(([s]) => s !== '200')
    const rssFlat = slots.every(
      (s) =>
        s.rssStart === undefined ||
        s.rssEnd === undefined ||
        s.rssEnd <= s.rssStart * (1 + RSS_SLACK.ratio) + RSS_SLACK.bytes,
    )
    const over = verdicts.filter((v) => v.rejected429Judged > 0 || v.maxInProgress > v.limit)
    const ok =
      over.length === 0 &&
      left.holders === 0 &&
      left.queued === 0 &&
      left.keysWithoutTtl.length === 0 &&
      figures.unanswered === 0 &&
      figures.errors.length === 0 &&
      non200.length === 0 &&
      rssFlat

    const mib = (b: number | undefined): string => (b === undefined ? '–' : (b / MiB).toFixed(1))
    const faultsText = [...injected]
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')
    const lines = [
      `| figure | value |`,
      `|---|---|`,
      `| run | ${started.toISOString().slice(0, 16)} UTC, ${((Date.now() - begin) / 1000).toFixed(0)} s, seed ${seed}, lease ${leaseMs} ms, 3 replicas, ${loopsOver(ROUTES, 8, 3).length} client loops on ${ROUTES.length} keys |`,
      `| client requests | ${requests} sent, ${figures.statuses[200] ?? 0} answered 200${non200.map(([s, n]) => `, ${n} answered ${s}`).join('')}, ${figures.lostWithReplica} lost with a killed replica, ${figures.errors.length} other errors, ${figures.unanswered} unanswered |`,
      `| faults injected | ${[...injected.values()].reduce((a, b) => a + b, 0)} (${faultsText}) |`,
      `| sim 429s | ${verdicts.reduce((n, v) => n + v.rejected429Judged, 0)} judged; ${verdicts.reduce((n, v) => n + v.rejected429 - v.rejected429Judged, 0)} while Redis was away or within one lease after (${away.during} away, ${away.after} after: replicas back at different moments) |`,
      ...verdicts.map(
        (v) =>
          `| ${v.key} | limit ${v.limit}: most in progress ${v.maxInProgress}, most attempted ${v.maxAttempted}, ${v.requests} requests, ${v.rejected429Judged} judged 429s |`,
      ),
      `| leaked after | ${left.holders} holders, ${left.queued} waiters, ${left.keysWithoutTtl.length} keys without a TTL |`,
      ...slots.map(
        (s, i) =>
          `| replica ${i} RSS (MiB) | ${mib(s.rssStart)} → ${mib(s.rssEnd)}${s.pids.length > 1 ? ` (restarted ${s.pids.length - 1}×; from its last start)` : ''} |`,
      ),
      `| goal (0 over, 0 leaked, RSS flat) | ${ok ? 'met' : 'MISSED'} |`,
    ]
    console.log(lines.join('\n'))
    if (!ok) {
      if (figures.errors.length > 0) console.log(`errors: ${figures.errors.slice(0, 5).join('; ')}`)
      if (over.length > 0) {
        console.log(
          `over the limit (sim ms): ${JSON.stringify(over.map((v) => ({ key: v.key, at: v.judgedAtMs, from: v.judgedFrom })))}`,
        )
        console.log(`faults (sim ms): ${marks.join(', ')}`)
      }
    }
    return ok ? 0 : 1
  } finally {
    await stack.close()
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('soak: failed to run', err)
    process.exit(2)
  },
)
