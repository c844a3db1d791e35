import createError from '@fastify/error'
import { isIP } from 'node:net'

/*
 * A defence against DNS rebinding while no admin token is set: only IP addresses, localhost and the
 * allowed names get the admin pages (docs/observability.md, "The admin port").
 */

export const AdminHostRefusedError = createError<[string]>(
  'SLUICE_ADMIN_HOST_REFUSED',
  'Without adminToken, the admin port answers this path only under an IP address, localhost or a name in adminHostNames (a defence against DNS rebinding); not under the Host %s',
  403,
)

const lower = (name: string): string => {
  const text = name.toLowerCase()
  return text.endsWith('.') ? text.slice(0, -1) : text
}

/** Whether a `Host` header value may reach the admin port's pages, given the names allowed besides IP addresses and localhost. */
export function hostChecker(names: readonly string[]): (host: string) => boolean {
  const allowed = new Set(names.map(lower))
  return (host) => {
    let name = host.trim()
    if (name.startsWith('[')) {
      // an IPv6 literal, `[::1]:9090`
      const end = name.indexOf(']')
      return end > 0 && isIP(name.slice(1, end)) === 6 && /^(:\d{1,5})?$/.test(name.slice(end + 1))
    }
    const colon = name.lastIndexOf(':')
    if (colon >= 0) {
      if (!/^\d{1,5}$/.test(name.slice(colon + 1))) return false
      name = name.slice(0, colon)
    }
    if (isIP(name) === 4) return true
    const key = lower(name)
    return key === 'localhost' || key.endsWith('.localhost') || allowed.has(key)
  }
}

/** A Host header as an error message shows it: short, and printable. */
export const shownHost = (host: string): string => JSON.stringify(host.length > 100 ? `${host.slice(0, 100)}…` : host)
