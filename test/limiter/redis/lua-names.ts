/**
 * A static reading of the names a Lua script declares and uses — enough for the limiter's scripts, not
 * a Lua parser: scopes are not tracked (a name declared anywhere counts as declared from there on).
 * Redis refuses an undefined global only when the line runs: this finds one before any line runs.
 */

const KEYWORDS = new Set(
  'and break do else elseif end false for function goto if in local nil not or repeat return then true until while'.split(
    ' ',
  ),
)

/** What a Redis script may use without declaring it. */
const REDIS_GLOBALS = new Set(
  'redis KEYS ARGV string math table tonumber tostring ipairs pairs unpack type cjson next select error pcall assert'.split(
    ' ',
  ),
)

export interface LuaNames {
  /** names used but declared nowhere (and not one of Redis's globals), with the line of their first use */
  readonly free: ReadonlyMap<string, number>
  /** names used on a line above their first declaration */
  readonly beforeDeclared: ReadonlyMap<string, number>
  /** how many times each name is used (declarations not counted) */
  readonly uses: ReadonlyMap<string, number>
}

interface Token {
  readonly text: string
  readonly line: number
}

function tokens(lua: string): Token[] {
  const out: Token[] = []
  const re =
    /--\[(=*)\[[\s\S]*?\]\1\]|--[^\n]*|\[(=*)\[[\s\S]*?\]\2\]|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|[A-Za-z_]\w*|\d[\w.]*|\.\.\.?|[=~<>]=|\n|\S/g
  let line = 1
  for (const m of lua.matchAll(re)) {
    const t = m[0]
    if (t === '\n') {
      line++
      continue
    }
    if (t.startsWith('--')) {
      line += t.split('\n').length - 1
      continue
    }
    out.push({ text: /^['"[]/.test(t) && t.length > 1 ? "''" : t, line })
    line += t.split('\n').length - 1
  }
  return out
}

const isName = (t: string | undefined): t is string => t !== undefined && /^[A-Za-z_]\w*$/.test(t) && !KEYWORDS.has(t)

export function luaNames(lua: string): LuaNames {
  const ts = tokens(lua)
  const declaredAt = new Map<string, number>()
  const declarations = new Set<number>() // token indexes that declare a name
  const declare = (i: number): void => {
    declarations.add(i)
    if (!declaredAt.has(ts[i]!.text)) declaredAt.set(ts[i]!.text, ts[i]!.line)
  }
  for (let i = 0; i < ts.length; i++) {
    const t = ts[i]!.text
    if (t === 'local' && ts[i + 1]?.text === 'function' && isName(ts[i + 2]?.text)) {
      declare(i + 2)
    } else if (t === 'local') {
      for (let j = i + 1; isName(ts[j]?.text); j += 2) {
        declare(j)
        if (ts[j + 1]?.text !== ',') break
      }
    } else if (t === 'for') {
      for (let j = i + 1; isName(ts[j]?.text); j += 2) {
        declare(j)
        if (ts[j + 1]?.text !== ',') break
      }
    }
    if (t === 'function') {
      let j = i + 1
      while (ts[j] !== undefined && ts[j]!.text !== '(') j++
      for (j++; ts[j] !== undefined && ts[j]!.text !== ')'; j++) if (isName(ts[j]!.text)) declare(j)
    }
  }
  const free = new Map<string, number>()
  const beforeDeclared = new Map<string, number>()
  const uses = new Map<string, number>()
  let braces = 0
  for (let i = 0; i < ts.length; i++) {
    const { text, line } = ts[i]!
    if (text === '{') braces++
    if (text === '}') braces--
    if (!isName(text) || declarations.has(i)) continue
    const prev = ts[i - 1]?.text
    if (prev === '.' || prev === ':') continue // a field
    if (braces > 0 && (prev === '{' || prev === ',' || prev === ';') && ts[i + 1]?.text === '=') continue // a table key
    uses.set(text, (uses.get(text) ?? 0) + 1)
    const at = declaredAt.get(text)
    if (at === undefined) {
      if (!REDIS_GLOBALS.has(text) && !free.has(text)) free.set(text, line)
    } else if (line < at && !beforeDeclared.has(text)) {
      beforeDeclared.set(text, line)
    }
  }
  return { free, beforeDeclared, uses }
}
