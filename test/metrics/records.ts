import type { Catalog, Endpoint } from '../../src/catalog/types.js'
import type { RequestRecord } from '../../src/record/record.js'
import { metricsSettingsSchema, type MetricsSettings, type MetricsSettingsInput } from '../../src/metrics/settings.js'

/** A finished request as the proxy records it; the defaults describe a plain forwarded GET. */
export function record(overrides: Partial<RequestRecord> = {}): RequestRecord {
  return {
    requestId: 'req-1',
    method: 'GET',
    endpoint: 'GET /accounts/{id}/contacts',
    template: '/accounts/{id}/contacts',
    instance: 'org1',
    app: undefined,
    status: 200,
    outcome: 'forwarded',
    version: undefined,
    upstreamVersion: undefined,
    totalSeconds: 0.2,
    queueSeconds: 0,
    upstreamSeconds: 0.2,
    retries: 0,
    upstream429s: 0,
    ...overrides,
  }
}

const endpoint = (id: string, limit: number): Endpoint => {
  const [method, template] = id.split(' ') as [string, string]
  return { id, method, template, limit, limitSource: 'published' }
}

/** Catalog data for the endpoints these tests use (the labels policy only reads the ids). */
export const catalog: Pick<Catalog, 'endpoints'> = {
  endpoints: [
    endpoint('POST /accounts/search', 1),
    endpoint('GET /accounts/{id}/contacts', 5),
    endpoint('GET /donations/{id}', 5),
  ],
}

export const settings = (input: MetricsSettingsInput = {}): MetricsSettings =>
  metricsSettingsSchema.parse({ defaultMetrics: false, ...input })
