/** `node --import tsx bench/redis/main.ts`: the Redis limiter benchmark alone, as a markdown table. */
import { runRedisBench } from './index.js'

runRedisBench().then(
  (table) => {
    process.stdout.write(`${table}\n`)
    process.exit(0)
  },
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  },
)
