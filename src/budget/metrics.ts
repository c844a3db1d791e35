import { Counter, Gauge, type Registry } from 'prom-client'
import { BUDGET_KINDS, type MemoryBudget } from './budget.js'

/** The budget's figures, read at scrape time: nothing per request. */
export function budgetMetrics(budget: MemoryBudget, registry: Registry): void {
  new Gauge({
    name: 'sluice_memory_budget_bytes',
    help:
      'The memory budget for requests, bodies, held answers and the cache ' +
      "(memory.budgetBytes, or derived from the container limit or V8's heap bound)",
    registers: [registry],
    collect() {
      this.set(budget.limit)
    },
  })
  new Gauge({
    name: 'sluice_memory_budget_used_bytes',
    help: 'Bytes of the memory budget held now, by kind (request, body, answer, cache)',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      for (const kind of BUDGET_KINDS) this.set({ kind }, budget.held(kind))
    },
  })
  new Counter({
    name: 'sluice_memory_budget_refusals_total',
    help: 'Work refused because the memory budget was full, by kind: request and body are 503 SLUICE_MEMORY_BUDGET answers, cache an answer not cached',
    labelNames: ['kind'],
    registers: [registry],
    // the budget counts; the counter is loaded from it at scrape time
    collect() {
      this.reset()
      for (const kind of BUDGET_KINDS) this.inc({ kind }, budget.refusals(kind))
    },
  })
}
