import { LUA_COMMON } from './lua-common.js'

/**
 * Each semaphore script carries only the shared Lua it uses (docs/redis-limiter.md, "Scripts": the
 * prelude). Every top-level `local` of a script runs on every call (a closure or a table made anew):
 * a script that pasted all of lua-common.ts paid for ~30 of them whatever it used.
 */

/** One top-level piece of the shared Lua: the locals it declares (none: a statement, always kept), its text. */
export interface LuaPiece {
  readonly names: readonly string[]
  readonly lua: string
  /** the identifiers it mentions, its own names left out */
  readonly uses: ReadonlySet<string>
}

/** Identifiers a piece of Lua mentions outside its comments and string literals. */
export function luaIdentifiers(lua: string): Set<string> {
  const code = lua.replace(/--[^\n]*|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"/g, ' ')
  return new Set(code.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? [])
}

/**
 * Cuts shared Lua into its top-level pieces: a piece starts at a column-0 `local` or statement, with
 * the comment lines just above it; indented lines and a column-0 `end` belong to the piece above.
 */
export function luaPieces(shared: string): LuaPiece[] {
  const pieces: { names: string[]; lines: string[] }[] = []
  let comments: string[] = []
  for (const line of shared.split('\n')) {
    if (line.trim() === '' || line.startsWith('--')) {
      comments.push(line)
      continue
    }
    if (/^\s/.test(line) || line === 'end') {
      const current = pieces.at(-1)
      if (current === undefined) throw new Error(`shared Lua: an indented line before any declaration: ${line}`)
      current.lines.push(...comments, line)
      comments = []
      continue
    }
    const fn = /^local function ([A-Za-z_]\w*)\(/.exec(line)
    const vars = /^local ([A-Za-z_][\w, ]*?)\s*=/.exec(line)
    const names = fn ? [fn[1]!] : vars ? vars[1]!.split(',').map((n) => n.trim()) : []
    if (names.length === 0 && !line.startsWith('if '))
      throw new Error(`shared Lua: a top-level line neither a local nor a statement: ${line}`)
    pieces.push({ names, lines: [...comments, line] })
    comments = []
  }
  return pieces.map((p) => {
    const lua = p.lines.join('\n')
    const uses = luaIdentifiers(lua)
    for (const n of p.names) uses.delete(n)
    return { names: p.names, lua, uses }
  })
}

const PIECES = luaPieces(LUA_COMMON)

/**
 * The pieces of `shared` that `body` needs, transitively, in their own order (each piece uses only
 * pieces above it, as in the shared text), joined: a prelude to paste before `body`.
 */
export function preludeFor(body: string, pieces: readonly LuaPiece[] = PIECES): string {
  const needed = luaIdentifiers(body)
  const kept: boolean[] = pieces.map(() => false)
  // a piece uses only pieces above it: one pass from the bottom up finds the whole closure
  for (let i = pieces.length - 1; i >= 0; i--) {
    const piece = pieces[i]!
    if (piece.names.length > 0 && !piece.names.some((n) => needed.has(n))) continue
    kept[i] = true
    for (const u of piece.uses) needed.add(u)
  }
  return pieces
    .filter((_, i) => kept[i])
    .map((p) => p.lua)
    .join('\n')
}

/** A semaphore script: the shared Lua its body needs, then the body. */
export function withPrelude(body: string): string {
  return `\n${preludeFor(body)}\n${body}`
}
