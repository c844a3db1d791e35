import type { FastifyBaseLogger } from 'fastify'

type Bindings = Parameters<FastifyBaseLogger['child']>[0]
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1]
type LineMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
const LINE_METHODS: readonly LineMethod[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/**
 * A request's logger that makes its pino child on the first line written: most requests write none
 * through it, and a child costs 17–25 times this (docs/benchmarks.md, "Hot-path tricks").
 */
class LazyChildLogger {
  #child: FastifyBaseLogger | undefined

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  /** the real child, made once */
  get made(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings, this.options))
  }

  get level(): string {
    return this.#child?.level ?? this.options?.level ?? this.parent.level
  }

  set level(level: string) {
    this.made.level = level
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.made.child(bindings, options)
  }
}

// The line methods, on the prototype (not one closure per request): each hands its arguments on.
for (const method of LINE_METHODS) {
  Object.defineProperty(LazyChildLogger.prototype, method, {
    value(this: LazyChildLogger, ...args: unknown[]): void {
      const made = this.made
      Reflect.apply(made[method], made, args)
    },
  })
}

/** Fastify's `childLoggerFactory` for the proxy: request loggers that cost nothing until used. */
export const lazyChildLoggerFactory = (
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildOptions,
): FastifyBaseLogger =>
  // The line methods are added to the prototype above; the class itself cannot declare them with pino's overloads.
  new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger
