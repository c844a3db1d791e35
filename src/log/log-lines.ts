import pino from 'pino'

/** Where every log line goes: pino's lines and the access lines alike, in the order written. */
export interface LogLines {
  write(line: string): boolean
  /** writes out what is pending, synchronously (shutdown, exit) */
  flush(): void
}

/** Flush at once past this many pending characters, so a busy turn never holds much in memory. */
const MAX_PENDING = 64 * 1024

/**
 * Log lines to stdout, one synchronous write per event-loop turn (docs/benchmarks.md, "Hot-path tricks"):
 * synchronous so a slow reader slows the proxy rather than growing its memory; pending lines are written at exit.
 */
export function stdoutLogLines(): LogLines {
  const out = pino.destination({ dest: 1, sync: true })
  let pending = ''
  let scheduled = false
  const flush = (): void => {
    if (pending === '') return
    const text = pending
    pending = ''
    out.write(text)
  }
  const flushAtTurnEnd = (): void => {
    scheduled = false
    flush()
  }
  process.once('exit', flush)
  return {
    write(line) {
      pending += line
      if (pending.length >= MAX_PENDING) flush()
      else if (!scheduled) {
        scheduled = true
        setImmediate(flushAtTurnEnd)
      }
      return true
    },
    flush,
  }
}
