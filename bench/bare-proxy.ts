// A bare @fastify/http-proxy in front of UPSTREAM on PORT: the baseline sluice is compared with.
import proxy from '@fastify/http-proxy'
import Fastify from 'fastify'

const upstream = process.env.UPSTREAM ?? 'http://127.0.0.1:8081'
const app = Fastify({ logger: false })
await app.register(proxy, { upstream, prefix: '/v2', rewritePrefix: '/v2', http2: false })
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
process.stdout.write(`${JSON.stringify({ listening: address })}\n`)
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
