import { collectDefaultMetrics, Gauge, Registry } from 'prom-client'
import { readBuildInfo, type BuildInfo } from './build-info.js'
import type { OrgPolicy } from './orgs.js'

/** how often the event-loop delay (nodejs_eventloop_lag_* metrics) is sampled */
export const EVENT_LOOP_SAMPLE_MS = 100

/** The registry with what comes before any metric of a request: prom-client's defaults and sluice_build_info. */
export function createRegistry(defaultMetrics: boolean, build: BuildInfo = readBuildInfo()): Registry {
  const registry = new Registry()
  // The event-loop delay is sampled every 100 ms, not prom-client's default 10: at 10 ms the sampling
  // timer cost the proxy 7-11% of its throughput at 64 connections in three paired runs (bench/turns.ts,
  // 30 rounds each), at 100 ms nothing that showed. A stall still shows: it delays the next sample.
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
