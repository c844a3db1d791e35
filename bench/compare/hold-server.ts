/**
 * The floor of the flood (bench/compare/flood.ts): a server that holds every request unanswered
 * while told to, then answers them all — what Node itself (`HOLD_KIND=node`: node:http) or Fastify
 * (`HOLD_KIND=fastify`: one route awaiting a promise per request, the body parsed) costs per held
 * connection, with nothing of sluice's. The flood runs it as plain JavaScript (its types stripped
 * first, no loader in the process: a loader would add to its idle memory), so it imports nothing of
 * the repository. By hand: `HOLD_KIND=node|fastify PORT=n node bench/compare/hold-server.ts`.
 *
 * Control, on the same port: POST /__hold/start (hold from now on), GET /__hold/status (held
 * requests and process.memoryUsage(), heap spaces), POST /__hold/release (answer every held request
 * with 200 and stop holding).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { getHeapSpaceStatistics } from 'node:v8'
import Fastify from 'fastify'

const kind = process.env.HOLD_KIND ?? 'node'
const port = Number(process.env.PORT ?? 0)
let holding = false
let waiting: (() => void)[] = []

function status(): string {
  const spaces: Record<string, number> = {}
  for (const s of getHeapSpaceStatistics()) spaces[s.space_name] = s.space_size
  return JSON.stringify({ held: waiting.length, memory: process.memoryUsage(), spaces })
}

/** The control routes; true when `url` was one. */
function control(method: string, url: string, answer: (body: string) => void): boolean {
  if (!url.startsWith('/__hold/')) return false
  if (url === '/__hold/start' && method === 'POST') holding = true
  if (url === '/__hold/release' && method === 'POST') {
    holding = false
    const all = waiting
    waiting = []
    for (const go of all) go()
  }
  answer(status())
  return true
}

if (kind === 'node') {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const answer = (body: string): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(body)
    req.resume()
    if (control(req.method ?? 'GET', req.url ?? '/', answer)) return
    if (holding) waiting.push(() => answer('{}'))
    else answer('{}')
  })
  server.keepAliveTimeout = 120_000
  server.listen(port, '127.0.0.1')
} else {
  const app = Fastify({ keepAliveTimeout: 120_000 })
  app.all('/__hold/*', (req, reply) => {
    control(req.method, req.url, (body) => void reply.type('application/json').send(body))
  })
  app.post('/*', async () => {
    if (holding) await new Promise<void>((resolve) => waiting.push(resolve))
    return {}
  })
  await app.listen({ port, host: '127.0.0.1' })
}
