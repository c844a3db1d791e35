import { startRedis } from '/work/wt/i18/test/support/redis.js'
import { spawnProxy } from '/work/wt/i18/test/support/process.js'
import { send } from '/work/wt/i18/test/support/http.js'
import { startSim } from '/work/wt/i18/src/sim/index.js'
const ENDPOINT = 'GET /accounts/{id}/memberships'
const sim = await startSim({ latencyMs: 40, hiddenLimits: { '1001': { [ENDPOINT]: 2 } } })
const redis = await startRedis()
const env: Record<string, string> = { SLUICE_UPSTREAM: sim.apiUrl, SLUICE_REQUEST_LOG: 'false', SLUICE_LEARNING_ENABLED: 'true' }
if (process.argv[2] === 'redis') env.SLUICE_REDIS_URL = redis.url
const n = process.argv[2] === 'redis' ? 3 : 1
const replicas = await Promise.all(Array.from({ length: n }, () => spawnProxy(env)))
let stop = false; let seq = 0
const loops = Array.from({ length: 24 }, async (_, i) => { while (!stop) await send(replicas[i % n]!.url, `/v2/accounts/${++seq}/memberships`, { headers: { authorization: `Basic ${Buffer.from('1001:k').toString('base64')}` } }) })
await new Promise((r) => setTimeout(r, 8000)); sim.reset(); await new Promise((r) => setTimeout(r, 8000))
const s = sim.stats(); const k = s.keys[`1001 ${ENDPOINT}`]!
console.log(process.argv[2], 'used', (k.requestMs / (2 * s.elapsedMs)).toFixed(3), '429', k.rejected429, 'req', k.requests)
for (const r of replicas) console.log(r.output().split('\n').filter((l) => l.includes('learned limit')).map((l) => { const o = JSON.parse(l); return o.time % 100000 + ' ' + o.from + '->' + o.to + ' ' + o.reason + ' held ' + o.held + ' v ' + o.learned }).join('\n')); stop = true; await Promise.all(loops); await Promise.all(replicas.map((r) => r.stop())); await redis.close(); await sim.close(); process.exit(0)
