import type { Settings } from './config/schema.js'

/** Node's HTTP server options from the client settings: header size and timeouts, checked every second. */
export function httpServerOptions(settings: Settings): {
  maxHeaderSize: number
  headersTimeout: number
  requestTimeout: number
  connectionsCheckingInterval: number
  requireHostHeader: boolean
} {
  return {
    // Node would answer a missing Host with a bare 400 of its own; the proxy answers it in the error shape.
    requireHostHeader: false,
    maxHeaderSize: settings.client.maxHeaderBytes,
    headersTimeout: settings.client.headersTimeoutMs,
    requestTimeout: settings.client.requestTimeoutMs,
    // Node's default checks every 30 s, so a 10 s header timeout could fire after 40 s.
    connectionsCheckingInterval: Math.min(1_000, settings.client.headersTimeoutMs),
  }
}
