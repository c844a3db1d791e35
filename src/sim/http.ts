import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { BoundedMap } from '../bounded/index.js'

/* The simulated upstream's small HTTP helpers: answers in the API's shape and its control headers. */

/**
 * A token's stand-in instance: a short digest, so stats and logs never show the token. GitHub counts
 * per token, however it is sent: `token T`, `Bearer T` and `bearer T` are one token.
 */
export const tokenInstance = (authorization: string | undefined): string =>
  authorization === undefined
    ? 'anonymous'
    : `token-${createHash('sha256').update(githubToken(authorization)).digest('hex').slice(0, 12)}`

function githubToken(authorization: string): string {
  const [scheme = '', ...rest] = authorization.trim().split(/\s+/)
  const lower = scheme.toLowerCase()
  return rest.length > 0 && (lower === 'token' || lower === 'bearer') ? rest.join(' ') : authorization.trim()
}
const JSON_TYPE = 'application/json; charset=utf-8'
const NO_BODY_STATUS = new Set([204, 205, 304])

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  extraHeaders?: Record<string, string>,
): void {
  const text = NO_BODY_STATUS.has(status) ? '' : JSON.stringify(body)
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text), ...extraHeaders })
  res.end(text)
}

/** The API's error shape: a JSON array of `{ code, message }`. */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  extraHeaders?: Record<string, string>,
): void {
  sendJson(res, status, [{ code: String(status), message }], extraHeaders)
}

export const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** Instance = the Basic-auth username (`Authorization: Basic base64(org:key)`), else `default`. */
export function makeInstanceOf(): (authorization: string | undefined) => string {
  // 1,024 headers: a test or benchmark uses a few organisations; a flood of new ones decodes again
  const cache = new BoundedMap<string, string>(1024)
  return (authorization) => {
    if (authorization === undefined) return 'default'
    return cache.getOrMake(authorization, () => {
      const match = /^basic\s+(\S+)\s*$/i.exec(authorization)
      if (match === null) return 'default'
      const decoded = Buffer.from(match[1]!, 'base64').toString('utf8')
      const colon = decoded.indexOf(':')
      const user = colon < 0 ? decoded : decoded.slice(0, colon)
      return user === '' ? 'default' : user
    })
  }
}

/** A whole number from a control header, or undefined when absent; NaN when present but not one. */
export function intHeader(req: IncomingMessage, name: string): number | undefined {
  const value = header(req, name)
  if (value === undefined) return undefined
  return /^\s*\d{1,9}\s*$/.test(value) ? Number(value) : Number.NaN
}

export const flag = (req: IncomingMessage, name: string): boolean => {
  const value = header(req, name)
  return value !== undefined && value !== '0' && value.toLowerCase() !== 'false'
}
