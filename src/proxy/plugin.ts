import type { FastifyError, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { MethodNotAllowedError } from '../front/errors.js'
import { createProxyHandler, type ProxyContext } from './handler.js'
import { replyWithError } from '../errors/reply.js'
import { outcomeOf } from '../errors/refusal.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** the calling app, resolved once at admission ('' until then, e.g. for a bad path) */
    sluiceApp: string
  }
}

/** The methods the proxy forwards; any other is answered 405. */
export const PROXY_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/**
 * The proxy: one catch-all route, so no variant of a path slips past the catalog's own matching;
 * bodies passed through raw; every error in the API's shape.
 */
async function proxyPlugin(fastify: FastifyInstance, ctx: ProxyContext): Promise<void> {
  fastify.removeAllContentTypeParsers()
  // The proxy never parses bodies: the handler reads (or streams) the raw payload.
  fastify.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
  fastify.setErrorHandler((err: FastifyError, request, reply) => {
    const { trace } = ctx.tracker.track(request, reply)
    trace.outcome ??= outcomeOf(err, typeof err.statusCode === 'number' ? err.statusCode : 500)
    replyWithError(err, request, reply)
  })
  fastify.decorateRequest('sluiceApp', '')
  // Only methods without a route get here: the route takes every path.
  fastify.setNotFoundHandler((request, reply) => {
    ctx.tracker.track(request, reply).trace.outcome = 'bad_request'
    reply.header('allow', PROXY_METHODS.join(', '))
    replyWithError(new MethodNotAllowedError(request.method, PROXY_METHODS.join(', ')), request, reply)
  })
  fastify.route({ method: PROXY_METHODS, url: '*', handler: routedHandler(ctx) })
  await Promise.resolve()
}

/**
 * One handler per route, picked by the request's prefix (routes.ts), which the tracker read on
 * arrival (`trace.upstream`; undefined: the default route's, the CRM's).
 */
function routedHandler(ctx: ProxyContext): ReturnType<typeof createProxyHandler> {
  const fallback = createProxyHandler(ctx, ctx.routes.default)
  if (ctx.routes.all.length === 1) return fallback
  const handlers = new Map(ctx.routes.all.slice(1).map((route) => [route.name, createProxyHandler(ctx, route)]))
  return (request, reply) => {
    const upstream = ctx.tracker.track(request, reply).trace.upstream
    return (upstream === undefined ? fallback : (handlers.get(upstream) ?? fallback))(request, reply)
  }
}

export default fp(proxyPlugin, { name: 'sluice-proxy', fastify: '5.x' })
