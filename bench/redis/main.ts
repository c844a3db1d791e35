/**
 * `node --import tsx bench/redis/main.ts [limiter|replicas]`: the Redis limiter benchmarks as markdown
 * tables — three processes contending (sluice vs redis-semaphore vs bottleneck), and the upstream's
 * utilisation through one sluice vs three replicas on Redis (needs `npm run build`).
 */
import { runRedisBench } from './index.js'
import { runReplicasBench } from './replicas.js'

async function main(): Promise<void> {
  const only = process.argv[2]
  if (only === undefined || only === 'limiter') process.stdout.write(`${await runRedisBench()}\n\n`)
  if (only === undefined || only === 'replicas') process.stdout.write(`${await runReplicasBench()}\n`)
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  },
)
