import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadCatalog } from '../catalog/index.js'
import type { Endpoint } from '../catalog/types.js'
import { flag, header, intHeader, makeInstanceOf, sendError, sendJson, tokenInstance } from './http.js'
import { resolveSimOptions, type SimOptions } from './options.js'
import { SimRates, type SimRateStats } from './rates.js'
import { ArrivalLog, handoffFigures, KeyState, statsKey, type ArrivalOutcome, type SimStats } from './stats.js'

/*
 * The simulated upstream: API v2 under `/v2`, enforcing §8 and §9 of docs/api/limits-and-versions.md
 * as written; its semantics and test controls are in docs/development.md, "The simulated API".
 */

export interface Sim {
  /** `http://HOST:PORT`; the API is under `${url}/v2` (the proxy's upstream setting) */
  readonly url: string
  /** `${url}/v2` */
  readonly apiUrl: string
  /** `${url}/github`: the GitHub REST stand-in (docs/development.md, "The simulated API") */
  readonly githubUrl: string
  readonly port: number
  stats(): SimStats
  /** what the rate-limited endpoints saw (SimOptions.rates), by `${instance} ${endpoint}` */
  rateStats(): Record<string, SimRateStats>
  /** Zero every counter, max and integral, and clear the arrival log (requests in progress stay counted). */
  reset(): void
  /**
   * Sets the limit the API keeps to itself for one organisation's endpoint (`undefined`: back to the
   * published or unlisted limit), from now on: requests in progress stay, new ones over it get 429.
   */
  setHiddenLimit(instance: string, endpoint: string, limit: number | undefined): void
  /** Opens the gate `name`: requests held at it (`x-sim-hold: name`) are answered, and later ones pass. */
  open(name: string): void
  /** Stop listening, drop every connection and pending answer. */
  close(): Promise<void>
}

const PREFIX = '/v2'
/**
 * The GitHub REST stand-in: at most `githubConcurrency` requests in progress per token, across every
 * path; over it the secondary limit's answer: 403 with Retry-After and GitHub's message.
 */
const GITHUB_PREFIX = '/github'
const GITHUB_ENDPOINT = 'ALL /*'
const GITHUB_THROTTLED = 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.'

// eslint-disable-next-line max-lines-per-function -- the simulator's test controls, one closure over its state (a test tool, not the product)
export async function startSim(options: Partial<SimOptions> = {}): Promise<Sim> {
  const opts = resolveSimOptions(options)
  const catalog = loadCatalog(opts.catalogFile, { defaultLimit: 1, overrides: opts.overrides })
  const instanceOf = makeInstanceOf()
  const githubEndpoint: Endpoint = Object.freeze({
    id: GITHUB_ENDPOINT,
    method: 'ALL',
    template: '/*',
    limit: opts.githubConcurrency,
    limitSource: 'published',
  })
  const keys = new Map<string, KeyState>()
  const arrivals = new ArrivalLog(opts.arrivalLogSize)
  const timers = new Set<NodeJS.Timeout>()
  /** gates: a closed one holds its requests' answers (`x-sim-hold`); absent means closed */
  const gates = new Map<string, { open: boolean; held: Array<() => void> }>()
  let epoch = performance.now()
  let badRequests = 0
  const rates = new SimRates(opts.rates)

  const hidden = new Map<string, number>()
  for (const [instance, limits] of Object.entries(opts.hiddenLimits)) {
    for (const [endpoint, limit] of Object.entries(limits)) hidden.set(statsKey(instance, endpoint), limit)
  }
  const publicLimitOf = (endpoint: Endpoint): number | null =>
    endpoint.limitSource === 'published' || endpoint.limitSource === 'override'
      ? endpoint.limit
      : (opts.unlistedLimit ?? null)
  /** the published (or unlisted) limit of each endpoint id seen, for a hidden limit taken back */
  const publicLimits = new Map<string, number | null>()

  function keyState(instance: string, endpoint: Endpoint, now: number): KeyState {
    const key = statsKey(instance, endpoint.id)
    let state = keys.get(key)
    if (state === undefined) {
      publicLimits.set(endpoint.id, publicLimitOf(endpoint))
      keys.set(key, (state = new KeyState(instance, endpoint.id, hidden.get(key) ?? publicLimitOf(endpoint), now)))
    }
    return state
  }

  function setHiddenLimit(instance: string, endpoint: string, limit: number | undefined): void {
    const key = statsKey(instance, endpoint)
    if (limit === undefined) hidden.delete(key)
    else hidden.set(key, limit)
    const state = keys.get(key)
    if (state !== undefined) state.limit = limit ?? publicLimits.get(endpoint) ?? null
  }

  function log(req: IncomingMessage, state: KeyState, now: number, outcome: ArrivalOutcome): void {
    arrivals.push({
      seq: header(req, 'x-test-seq') ?? null,
      instance: state.instance,
      endpoint: state.endpoint,
      atMs: now - epoch,
      outcome,
    })
  }

  function badRequest(res: ServerResponse, status: number, message: string): void {
    badRequests++
    sendError(res, status, message)
  }

  function stats(): SimStats {
    const now = performance.now()
    const snapshot: Record<string, ReturnType<KeyState['snapshot']>> = {}
    let handoffs = 0
    const gaps: number[] = []
    for (const [key, state] of keys) {
      snapshot[key] = state.snapshot(now)
      const samples = state.handoffSamples()
      handoffs += samples.count
      for (const gap of samples.gaps) gaps.push(gap)
    }
    return {
      elapsedMs: now - epoch,
      keys: snapshot,
      arrivals: arrivals.toArray(),
      arrivalsDropped: arrivals.dropped,
      badRequests,
      handoffs: handoffFigures(handoffs, gaps),
    }
  }

  function reset(): void {
    const now = performance.now()
    epoch = now
    for (const [key, state] of keys) {
      if (state.inProgress === 0) keys.delete(key)
      else state.reset(now)
    }
    arrivals.clear()
    rates.reset()
    badRequests = 0
    for (const [name, gate] of gates) if (gate.held.length === 0) gates.delete(name)
    for (const gate of gates.values()) gate.open = false
  }

  function open(name: string): void {
    const gate = gates.get(name)
    if (gate === undefined) return void gates.set(name, { open: true, held: [] })
    gate.open = true
    for (const answer of gate.held.splice(0)) answer()
  }

  /** Runs `answer` now when the gate is open, else once it opens. */
  function atGate(name: string, answer: () => void): void {
    let gate = gates.get(name)
    if (gate === undefined) gates.set(name, (gate = { open: false, held: [] }))
    if (gate.open) answer()
    else gate.held.push(answer)
  }

  function control(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (path === '/__sim/stats' && req.method === 'GET') return sendJson(res, 200, stats())
    if (path === '/__sim/reset' && req.method === 'POST') {
      reset()
      res.writeHead(204).end()
      return
    }
    const gate = new URL(req.url ?? '/', 'http://sim').searchParams.get('gate')
    if (path === '/__sim/open' && req.method === 'POST' && gate !== null) {
      open(gate)
      res.writeHead(204).end()
      return
    }
    badRequest(
      res,
      404,
      `No sim control ${req.method ?? ''} ${path}; there are GET /__sim/stats, POST /__sim/reset and POST /__sim/open?gate=NAME`,
    )
  }

  // eslint-disable-next-line max-lines-per-function -- the simulator's test controls, one closure over its state (a test tool, not the product)
  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const path = q < 0 ? url : url.slice(0, q)
    if (path.startsWith('/__sim/')) return control(req, res, path)
    const github = path === GITHUB_PREFIX || path.startsWith(`${GITHUB_PREFIX}/`)
    if (
      !github &&
      (!path.startsWith(PREFIX) || (path.length > PREFIX.length && path.charCodeAt(PREFIX.length) !== 0x2f))
    ) {
      return badRequest(res, 404, `Not found: the API is under ${PREFIX}, not ${path}`)
    }
    const method = req.method ?? 'GET'
    const apiPath = path.slice(github ? GITHUB_PREFIX.length : PREFIX.length)
    const match = github ? ({ ok: true, endpoint: githubEndpoint } as const) : catalog.match(method, apiPath)
    if (!match.ok) return badRequest(res, 400, match.message)

    // control headers are checked before anything is counted, so a typo never skews the figures
    const status = intHeader(req, 'x-sim-status')
    const delay = intHeader(req, 'x-sim-delay-ms')
    const retryAfter = header(req, 'x-sim-retry-after')
    if (status !== undefined && !(status >= 200 && status <= 599))
      return badRequest(res, 400, 'x-sim-status must be a status 200-599')
    if (Number.isNaN(delay)) return badRequest(res, 400, 'x-sim-delay-ms must be a whole number of ms')
    if (retryAfter !== undefined && !/^\s*\d{1,9}\s*$/.test(retryAfter))
      return badRequest(res, 400, 'x-sim-retry-after must be whole seconds')

    const now = performance.now()
    const instance = github ? tokenInstance(header(req, 'authorization')) : instanceOf(header(req, 'authorization'))
    const state = keyState(instance, match.endpoint, now)
    state.requests++

    const version = github ? undefined : header(req, 'neon-api-version')
    if (version !== undefined && opts.isRetired(version, opts.now())) {
      state.rejected410++
      log(req, state, now, 'retired')
      return sendError(res, 410, `API version ${version} is retired and no longer valid`)
    }
    const retryHeaders = retryAfter === undefined ? undefined : { 'retry-after': retryAfter.trim() }
    if (state.limit !== null && state.inProgress >= state.limit) {
      state.refused()
      log(req, state, now, 'limited')
      if (github)
        return sendJson(
          res,
          403,
          {
            message: GITHUB_THROTTLED,
            documentation_url: 'https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api',
          },
          { 'retry-after': retryAfter?.trim() ?? '1' },
        )
      return sendError(
        res,
        429,
        `Too many requests: ${state.limit} in progress for ${match.endpoint.id} of instance ${instance}`,
        retryHeaders,
      )
    }
    const rated = rates.check(instance, match.endpoint.id, now)
    if (rated?.over === true) {
      state.rejected429++
      log(req, state, now, 'limited')
      return sendError(
        res,
        429,
        `Too many requests: over the rate of ${match.endpoint.id} for instance ${instance}`,
        rated.headers,
      )
    }
    if (opts.rejectRatio > 0 && opts.random() < opts.rejectRatio) {
      state.rejected429++
      state.pushback429++
      log(req, state, now, 'pushback')
      return sendError(
        res,
        429,
        `Too many requests for ${match.endpoint.id} of instance ${instance} (simulated pushback)`,
        retryHeaders,
      )
    }

    state.enter(now)
    log(req, state, now, 'admitted')
    let finished = false
    const finish = (): void => {
      if (finished) return
      finished = true
      state.leave(performance.now())
    }

    const chunks: Buffer[] = []
    let kept = 0
    let bodyBytes = 0
    let bodyDone = false
    req.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length
      if (kept < opts.echoBodyBytes) {
        const part = chunk.length <= opts.echoBodyBytes - kept ? chunk : chunk.subarray(0, opts.echoBodyBytes - kept)
        chunks.push(part)
        kept += part.length
      }
    })
    // hung up before the body was in: the work never started
    req.on('close', () => {
      if (!bodyDone) finish()
    })
    req.on('end', () => {
      bodyDone = true
      if (flag(req, 'x-sim-hang')) {
        res.on('close', finish)
        return
      }
      const answer = (): void => {
        finish()
        if (res.destroyed) return // the client left; the work is done all the same
        if (flag(req, 'x-sim-destroy')) {
          req.socket.destroy()
          return
        }
        sendJson(
          res,
          status ?? 200,
          {
            method,
            path: apiPath,
            query: q < 0 ? '' : url.slice(q + 1),
            headers: req.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            bodyBytes,
            instance,
            endpoint: match.endpoint.id,
            limit: state.limit,
          },
          rated?.headers,
        )
      }
      const hold = header(req, 'x-sim-hold')
      if (hold !== undefined) return atGate(hold, answer)
      const wait = delay ?? opts.latencyMs + (opts.jitterMs > 0 ? opts.random() * opts.jitterMs : 0)
      if (wait <= 0) return answer()
      const timer = setTimeout(() => {
        timers.delete(timer)
        answer()
      }, wait)
      timer.unref()
      timers.add(timer)
    })
  }

  const server = createServer({ noDelay: true, keepAlive: true }, onRequest)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host
  const url = `http://${host}:${port}`

  let closing: Promise<void> | undefined
  return {
    url,
    apiUrl: url + PREFIX,
    githubUrl: url + GITHUB_PREFIX,
    port,
    stats,
    rateStats: () => rates.stats(),
    reset,
    setHiddenLimit,
    open,
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer)
        timers.clear()
        gates.clear()
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closing
    },
  }
}
