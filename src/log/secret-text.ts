/**
 * Secrets inside free text (URL passwords, auth values, `apiKey=`, Redis `AUTH` arguments), which field-name
 * redaction cannot reach; masked in logged errors and in every pino line (docs/observability.md, "Request logs").
 */

export const MASK = '***'

// `scheme://user:password@` or `scheme://token@`: the userinfo of a URL (RFC 3986 §3.2.1).
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@"'\\]*)@/gi
// `Basic dXNlcjprZXk=`, `Bearer abc.def`: credentials after an auth scheme.
const AUTH_VALUE = /\b(Basic|Bearer|Token)(\s+)[A-Za-z0-9._~+/=-]{8,}/g
// `apiKey=…`, `password=…` in a query string or a form.
const SECRET_PARAM = /\b(api[_-]?key|apikey|password|passwd|secret|token|access_token)=([^&\s"'#]+)/gi
// A Redis command as ioredis keeps it on its errors, serialized: `"name":"auth","args":[…]`.
const REDIS_ARGS = /("name":"[a-z]+","args":)\[[^\]]*\]/gi

/** `redis://:pw@h` → `redis://:***@h`, `https://user:pw@h` → `https://user:***@h`, `https://token@h` → `https://***@h`. */
function maskUserinfo(_m: string, scheme: string, userinfo: string): string {
  const colon = userinfo.indexOf(':')
  return colon < 0 ? `${scheme}${MASK}@` : `${scheme}${userinfo.slice(0, colon)}:${MASK}@`
}

/** The text with every credential it visibly holds masked; text without any comes back as it was. */
export function maskSecretText(text: string): string {
  // Cheap tests first: nearly every line holds none of these.
  let out = text
  if (out.includes('@')) out = out.replace(URL_USERINFO, maskUserinfo)
  if (out.includes('Basic') || out.includes('Bearer') || out.includes('Token'))
    out = out.replace(AUTH_VALUE, `$1$2${MASK}`)
  if (out.includes('=')) out = out.replace(SECRET_PARAM, `$1=${MASK}`)
  if (out.includes('"args":')) out = out.replace(REDIS_ARGS, `$1["${MASK}"]`)
  return out
}

/** A URL for a log line or a message: its password (or lone user token) masked. */
export const maskUrl = (url: string): string => url.replace(URL_USERINFO, maskUserinfo)
