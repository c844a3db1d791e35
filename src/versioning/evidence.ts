/**
 * Evidence that upstream 410s mean "this API version is retired", not "this resource is gone"
 * (docs/versioning.md, "What happens to a request", learned retirements). Times are arguments.
 */

export interface LearnRules {
  /** 410s needed, counted within the window */
  readonly minAnswers: number
  /** distinct instances (organisations) among them */
  readonly minInstances: number
  /** distinct endpoints among them */
  readonly minEndpoints: number
  readonly windowMs: number
}

/** One 410 the upstream gave for a version. */
export interface GoneAnswer {
  readonly atMs: number
  readonly instance: string
  readonly endpoint: string
}

/** What a learned retirement rests on: logged, and shown on /status (counts only, no instance ids). */
export interface Evidence {
  readonly answers: number
  readonly instances: readonly string[]
  readonly endpoints: readonly string[]
  readonly firstAtMs: number
  readonly lastAtMs: number
}

/** 410s kept per version: enough for any sane rule, and a bound on memory whatever the traffic. */
export const MAX_ANSWERS_KEPT = 256

export class GoneAnswers {
  private readonly byVersion = new Map<string, GoneAnswer[]>()

  constructor(private readonly rules: LearnRules) {}

  /** True while some version has 410s on record (the proxy's 2xx path checks this before anything else). */
  get pending(): boolean {
    return this.byVersion.size > 0
  }

  /** A 2xx for the version: the version works, so the 410s so far were about resources. */
  succeeded(version: string): void {
    this.byVersion.delete(version)
  }

  /** Records a 410; returns the evidence (and forgets it) once the rules are met. */
  gone(version: string, answer: GoneAnswer): Evidence | undefined {
    let list = this.byVersion.get(version)
    if (list === undefined) this.byVersion.set(version, (list = []))
    const since = answer.atMs - this.rules.windowMs
    let stale = 0
    while (stale < list.length && list[stale]!.atMs < since) stale++
    if (stale > 0) list.splice(0, stale)
    list.push(answer)
    if (list.length > MAX_ANSWERS_KEPT) list.shift()
    if (list.length < this.rules.minAnswers) return undefined
    const instances = new Set(list.map((a) => a.instance))
    const endpoints = new Set(list.map((a) => a.endpoint))
    if (instances.size < this.rules.minInstances || endpoints.size < this.rules.minEndpoints) return undefined
    this.byVersion.delete(version)
    return {
      answers: list.length,
      instances: [...instances],
      endpoints: [...endpoints],
      firstAtMs: list[0]!.atMs,
      lastAtMs: answer.atMs,
    }
  }

  /** The version's 410s on record now (for /status: a retirement that is being considered). */
  count(version: string): number {
    return this.byVersion.get(version)?.length ?? 0
  }
}
