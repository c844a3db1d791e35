import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyBaseLogger } from 'fastify'
import {
  AppEndpointForbiddenError,
  AppOrgForbiddenError,
  AppUnauthenticatedError,
  NoApiKeyError,
  refusalOf,
} from './errors.js'
import { credentialValue, crmInjection, keyNames, shadowsUpstream, type Injection } from './injection.js'
import { nameChanges, reloadChanged, type AppsLoaded, type AppsReloaded } from './loaded.js'
import { readAppFile, readOrgKeys, type OrgKeys } from './sources.js'
import type { AppList, AppSettings, CredentialSettings } from './settings.js'
import { mayUseEndpoint, mayUseOrg, TokenTable, type KnownApp } from './tokens.js'

/** the app of a request that names none */
export const DEFAULT_APP = 'default'

/** Which app is calling, and what to do with the Authorization header upstream. */
export interface Caller {
  readonly app: string
  /** undefined: forward the client's Authorization as it is; null: drop it; a string: send this one */
  readonly authorization: string | null | undefined
  /** a key injected into another header than Authorization (docs/upstreams.md, "Credentials") */
  readonly injected?: { readonly header: string; readonly value: string }
}

export interface AppGate {
  /** header names that steer sluice and never go upstream (the app token header too, identity on or off) */
  readonly controlHeaders: readonly string[]
  /**
   * Whether what the request names may be recorded as sent (its request id): always with app
   * identity off; with it on, when it carries a known app token. The answer is kept for `resolve`.
   */
  authenticates(headers: IncomingHttpHeaders): boolean
  /**
   * The app of a request to `endpointId` for organisation `org`; throws the 401/403 answers when app
   * identity is on and the request may not pass. `user`: the username of an injected key, when
   * `org` is another upstream's scoped name (docs/upstreams.md, "Keys"); `org` itself by default.
   * `injection`: how this upstream carries the key (the CRM's by default).
   */
  resolve(
    headers: IncomingHttpHeaders,
    org: string,
    endpointId: string,
    method: string,
    user?: string,
    injection?: Injection,
  ): Caller
  /** what is loaded now: counts only (the start-up line) */
  loaded(): AppsLoaded
  /** re-reads `apps.file` and `credentials.keysDir` (SIGHUP calls it; so does the timer, which logs a change); keeps the old on error */
  reload(): AppsReloaded
  close(): void
}

const VALID_APP_HEADER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/** Basic-auth password, read only while the request is admitted; never stored. */
function basicPassword(auth: string | undefined): string | undefined {
  if (auth === undefined || auth.length <= 6 || auth.slice(0, 6).toLowerCase() !== 'basic ') return undefined
  const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon < 0 ? undefined : decoded.slice(colon + 1)
}

/**
 * Whether an Authorization value carries a known app token anywhere an API would read a secret: the
 * Basic password or username, or the credentials of any other scheme (`Bearer <token>`). Such a value
 * never goes upstream (docs/apps.md, "Giving an app a token"), whichever header identified the app.
 */
function carriesToken(auth: string | undefined, table: TokenTable): boolean {
  if (auth === undefined) return false
  const text = auth.trim()
  const space = text.search(/\s/)
  const credentials = space < 0 ? text : text.slice(space + 1).trim()
  const parts = [credentials]
  if (space >= 0 && text.slice(0, space).toLowerCase() === 'basic') {
    const decoded = Buffer.from(credentials, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    parts.push(...(colon < 0 ? [decoded] : [decoded.slice(0, colon), decoded.slice(colon + 1)]))
  }
  return parts.some((part) => part !== '' && table.identify(part) !== undefined)
}

const NOTHING_LOADED: AppsLoaded = { identity: false, apps: 0, apiKeys: 0, keyFiles: 0 }
const NO_KEYS: OrgKeys = { keys: new Map(), files: 0 }

export interface AppGateDeps {
  readonly log: FastifyBaseLogger
  readonly env?: NodeJS.ProcessEnv
  /** the names of the upstreams besides the CRM's (docs/upstreams.md) */
  readonly upstreams?: readonly string[]
  /** whether some upstream has keys injected: they are read then (default `credentials.inject`) */
  readonly injects?: boolean
}

/**
 * App identity and credential injection (docs/apps.md). A bad file stops the start; a later re-read
 * that fails keeps what was loaded and logs which file, never its content.
 */
// eslint-disable-next-line max-lines-per-function -- one closure over the reloadable app table; to be split with its owner
export function createAppGate(
  apps: AppSettings,
  credentials: CredentialSettings,
  appHeader: string,
  deps: AppGateDeps,
): AppGate {
  const env = deps.env ?? process.env
  const loadList = (): AppList => ({ ...apps.list, ...(apps.file !== undefined ? readAppFile(apps.file) : {}) })
  const loadKeys = (): OrgKeys => readOrgKeys(credentials.keysDir, env)

  const tokenHeader = apps.tokenHeader
  if (!apps.enabled) {
    // Trusted mode: the app names itself in a header (for logs, metrics and fair share). An app token
    // sent anyway (before identity is turned on, or after a rollback) is still removed: it is no API's.
    return {
      controlHeaders: [appHeader, tokenHeader],
      authenticates: () => true,
      resolve(headers) {
        const named = headers[appHeader]
        return {
          app: typeof named === 'string' && VALID_APP_HEADER.test(named) ? named : DEFAULT_APP,
          authorization: undefined,
        }
      },
      loaded: () => NOTHING_LOADED,
      reload: () => ({
        ...NOTHING_LOADED,
        appsAdded: [],
        appsRemoved: [],
        appsChanged: [],
        keysAdded: [],
        keysRemoved: [],
        keysChanged: [],
        notReread: [],
      }),
      close() {},
    }
  }

  let list = loadList()
  let table = new TokenTable(list)
  const injects = deps.injects ?? credentials.inject
  const upstreams = new Set(deps.upstreams ?? [])
  const crm = crmInjection(credentials.inject)
  let orgKeys: OrgKeys = injects ? loadKeys() : NO_KEYS
  let keys = orgKeys.keys
  const loaded = (): AppsLoaded => ({ identity: true, apps: table.size, apiKeys: keys.size, keyFiles: orgKeys.files })
  const reload = (): AppsReloaded => {
    const [listBefore, keysBefore] = [list, keys]
    const notReread: string[] = []
    try {
      list = loadList()
      table = new TokenTable(list)
    } catch (err) {
      notReread.push('apps.file')
      deps.log.warn(
        { setting: 'apps.file', problem: (err as Error).message },
        'app tokens not reloaded; the ones loaded before stay in force',
      )
    }
    if (injects) {
      try {
        orgKeys = loadKeys()
        keys = orgKeys.keys
      } catch (err) {
        notReread.push('credentials.keysDir')
        deps.log.warn(
          { setting: 'credentials.keysDir', problem: (err as Error).message },
          'API keys not reloaded; the ones loaded before stay in force',
        )
      }
    }
    const appChanges = nameChanges(new Map(Object.entries(listBefore)), new Map(Object.entries(list)))
    const keyChanges = nameChanges(keysBefore, keys)
    return {
      ...loaded(),
      appsAdded: appChanges.added,
      appsRemoved: appChanges.removed,
      appsChanged: appChanges.changed,
      keysAdded: keyChanges.added,
      keysRemoved: keyChanges.removed,
      keysChanged: keyChanges.changed,
      notReread,
    }
  }
  // The timer's re-reads say so only when something changed (SIGHUP's always: src/main.ts).
  const reloadOnTimer = (): void => {
    const reloaded = reload()
    if (reloadChanged(reloaded)) deps.log.info({ ...reloaded, trigger: 'timer' }, 'app tokens and API keys re-read')
  }
  const needsTimer = apps.file !== undefined || (injects && credentials.keysDir !== undefined)
  const keyOf = (org: string): string | undefined => {
    // the CRM's org is its own key name: no list made on the way of every request
    if (org.indexOf(' ') < 0) return keys.get(org)
    for (const name of keyNames(org)) {
      const key = keys.get(name)
      if (key !== undefined) return key
    }
    return undefined
  }
  const timer = needsTimer ? setInterval(reloadOnTimer, apps.reloadIntervalMs) : undefined
  timer?.unref()

  const identify = (headers: IncomingHttpHeaders): KnownApp | undefined => {
    const fromHeader = headers[tokenHeader]
    const token = typeof fromHeader === 'string' ? fromHeader : basicPassword(headers.authorization)
    return token === undefined || token === '' ? undefined : table.identify(token)
  }
  // The app found when the request id was chosen (only requests that send one are asked), kept for resolve.
  const found = new WeakMap<IncomingHttpHeaders, KnownApp | null>()
  return {
    controlHeaders: [appHeader, tokenHeader],
    authenticates(headers) {
      const app = identify(headers)
      found.set(headers, app ?? null)
      return app !== undefined
    },
    resolve(headers, org, endpointId, method, user = org, injection = crm) {
      const known = found.get(headers)
      const app = known === undefined ? identify(headers) : (known ?? undefined)
      if (app === undefined) throw new AppUnauthenticatedError()
      // a CRM id shaped like another upstream's key name (`trial.1001`) is granted only by `*`, and has no key
      const shadowed = shadowsUpstream(org, upstreams)
      if (shadowed ? !app.anyOrg : !mayUseOrg(app, org))
        throw refusalOf(new AppOrgForbiddenError(app.name, org), app.name, false)
      if (!mayUseEndpoint(app, endpointId, method))
        throw refusalOf(new AppEndpointForbiddenError(app.name, endpointId), app.name, true)
      // Without injection the client's Authorization goes on only when it holds no app token: a token in
      // the Basic password (the app's, not an API key), or sent there as well as in the token header, never does.
      const fromHeader = typeof headers[tokenHeader] === 'string'
      const own = fromHeader && !carriesToken(headers.authorization, table) ? undefined : null
      if (!injection.inject) return { app: app.name, authorization: own }
      const key = shadowed ? undefined : keyOf(org)
      if (key === undefined) throw refusalOf(new NoApiKeyError(org), app.name, true)
      const value = credentialValue(injection, user, key)
      return injection.header === 'authorization'
        ? { app: app.name, authorization: value }
        : { app: app.name, authorization: own, injected: { header: injection.header, value } }
    },
    loaded,
    reload,
    close() {
      if (timer !== undefined) clearInterval(timer)
    },
  }
}
