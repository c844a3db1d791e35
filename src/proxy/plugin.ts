import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createProxyHandler, type ProxyContext } from './handler.js'
import { replyWithError } from '../errors/reply.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** the calling app, resolved once at admission ('' until then, e.g. for a bad path) */
    sluiceApp: string
  }
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/**
 * The proxy: one catch-all route (sluice does its own path matching, so no variant of a path can
 * slip past the catalog), bodies passed through raw, every error in the API's shape.
 */
async function proxyPlugin(fastify: FastifyInstance, ctx: ProxyContext): Promise<void> {
  fastify.removeAllContentTypeParsers()
  // The proxy never parses bodies: the handler reads (or streams) the raw payload.
  fastify.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
  fastify.setErrorHandler(replyWithError)
  fastify.decorateRequest('sluiceApp', '')
  fastify.route({ method: METHODS, url: '*', handler: createProxyHandler(ctx) })
  await Promise.resolve()
}

export default fp(proxyPlugin, { name: 'sluice-proxy', fastify: '5.x' })
