import { collectDefaultMetrics, Gauge, Registry } from 'prom-client'
import { readBuildInfo, type BuildInfo } from './build-info.js'
import type { OrgPolicy } from './orgs.js'

/** how often the event-loop delay (nodejs_eventloop_lag_* metrics) is sampled */
export const EVENT_LOOP_SAMPLE_MS = 100

/** The registry with what comes before any metric of a request: prom-client's defaults and sluice_build_info. */
export function createRegistry(defaultMetrics: boolean, build: BuildInfo = readBuildInfo()): Registry {
  const registry = new Registry()
  // 100 ms, not prom-client's 10: the 10 ms timer cost throughput (docs/observability.md, "Metrics").
  if (defaultMetrics) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })
  new Gauge({
    name: 'sluice_build_info',
    help: 'Always 1; the labels say which sluice this is: version (package.json), revision (git), node (Node.js version)',
    labelNames: ['version', 'revision', 'node'],
    registers: [registry],
  }).set({ version: build.version, revision: build.revision, node: build.node }, 1)
  return registry
}

/** sluice_metrics_orgs: how many organisations have series of their own. */
export function registerOrgCount(registry: Registry, orgs: OrgPolicy): void {
  new Gauge({
    name: 'sluice_metrics_orgs',
    help: 'Organisations that have series of their own (metrics.maxInstances caps it; the rest are org="_other")',
    registers: [registry],
    collect() {
      this.set(orgs.ownCount)
    },
  })
}
