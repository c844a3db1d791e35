import { Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { CellCounter, CellHistogram } from '../../src/metrics/cells.js'

/**
 * The fast metrics of src/metrics/cells.ts must scrape exactly as prom-client's own Counter and
 * Histogram would for the same events. The histogram relies on how prom-client's registry reads a
 * metric (get(), name, help, type, aggregator); a prom-client upgrade that changed that fails here.
 */
const BUCKETS = [0.01, 0.1, 1, 10]
const OBSERVATIONS: [string, number][] = [
  ['GET /a', 0.005],
  ['GET /a', 0.01],
  ['GET /a', 0.5],
  ['GET /b', 20],
  ['GET /a', 3],
  ['GET /b', 0.1],
]

describe('cells scrape like prom-client metrics', () => {
  it('a CellHistogram prints what a prom-client Histogram prints for the same observations', async () => {
    const ours = new Registry()
    const cells = new CellHistogram('x_seconds', 'help text', BUCKETS, ours)
    const theirs = new Registry()
    const real = new Histogram({
      name: 'x_seconds',
      help: 'help text',
      labelNames: ['endpoint'],
      buckets: BUCKETS,
      registers: [theirs],
    })
    for (const [endpoint, value] of OBSERVATIONS) {
      cells.cellByKey(endpoint, { endpoint }).observe(value)
      real.observe({ endpoint }, value)
    }
    expect(await ours.metrics()).toBe(await theirs.metrics())
  })

  it('a CellCounter prints what a prom-client Counter prints, and drops an organisation’s series together', async () => {
    const ours = new Registry()
    const counter = new CellCounter('y_total', 'help text', ['endpoint', 'org'], ours)
    counter.cellByKey('a1', { endpoint: 'GET /a', org: '1' }, '1').n += 3
    counter.cellByKey('b1', { endpoint: 'GET /b', org: '1' }, '1').n++
    counter.cellByKey('a2', { endpoint: 'GET /a', org: '2' }, '2').n++
    counter.cellByKey('never', { endpoint: 'GET /c', org: '2' }, '2')
    const body = await ours.metrics()
    expect(body).toContain('y_total{endpoint="GET /a",org="1"} 3\n')
    expect(body).toContain('y_total{endpoint="GET /b",org="1"} 1\n')
    expect(body).toContain('y_total{endpoint="GET /a",org="2"} 1\n')
    expect(body).not.toContain('GET /c') // a series appears once it has counted something
    counter.dropOrg('1')
    const after = await ours.metrics()
    expect(after).not.toContain('org="1"')
    expect(after).toContain('y_total{endpoint="GET /a",org="2"} 1\n')
  })
})
