import { describe, expect, it } from 'vitest'
import { ACQUIRE_LUA } from '../../../src/limiter/redis/acquire/lua.js'
import { ADOPT_LUA } from '../../../src/limiter/redis/adopt/lua.js'
import { HEARTBEAT_LUA } from '../../../src/limiter/redis/heartbeat/lua.js'
import { LUA_COMMON } from '../../../src/limiter/redis/lua-common.js'
import { luaPieces, preludeFor } from '../../../src/limiter/redis/lua-prelude.js'
import { RELEASE_LUA } from '../../../src/limiter/redis/release/lua.js'
import { RENEW_LUA } from '../../../src/limiter/redis/renew/lua.js'
import { ACTIVE_LUA, STATUS_LUA } from '../../../src/limiter/redis/status/lua.js'
import { SYNC_LUA } from '../../../src/limiter/redis/sync/lua.js'
import { useRedis } from '../../support/use-redis.js'
import { luaNames } from './lua-names.js'

/**
 * Each script carries the shared Lua it uses and nothing else (docs/redis-limiter.md, "Scripts": the
 * prelude): every name a script uses is declared above its use, and every shared helper it carries is
 * used. Redis refuses an undefined global only when the line runs — on a rare path, in production —
 * so this is read statically, then every script is compiled by a real Redis.
 */
const SCRIPTS: Record<string, string> = {
  acquire: ACQUIRE_LUA,
  release: RELEASE_LUA,
  sync: SYNC_LUA,
  adopt: ADOPT_LUA,
  status: STATUS_LUA,
  active: ACTIVE_LUA,
  renew: RENEW_LUA,
  heartbeat: HEARTBEAT_LUA,
}

const SHARED_NAMES = luaPieces(LUA_COMMON).flatMap((p) => p.names)

const redis = useRedis()

describe.each(Object.entries(SCRIPTS))('the %s script', (_name, lua) => {
  const names = luaNames(lua)

  it('uses no name it does not declare, and none above its declaration', () => {
    expect(Object.fromEntries(names.free)).toEqual({})
    expect(Object.fromEntries(names.beforeDeclared)).toEqual({})
  })

  it('carries no shared helper it does not use', () => {
    const carried = SHARED_NAMES.filter((n) => new RegExp(`^local (function )?([\\w, ]*\\b)?${n}\\b`, 'm').test(lua))
    expect(carried.filter((n) => (names.uses.get(n) ?? 0) === 0)).toEqual([])
  })

  it('compiles in Redis', async () => {
    const client = redis.client()
    try {
      await expect(client.script('LOAD', lua)).resolves.toMatch(/^[0-9a-f]{40}$/)
    } finally {
      client.disconnect()
    }
  })
})

describe('the prelude of a script', () => {
  it('holds the helpers its body calls and the helpers they call, in the shared order', () => {
    const prelude = preludeFor('return fmt(start_tag(KEYS[1], ARGV[1], 1, 0))')
    const declared = [...prelude.matchAll(/^local (?:function )?([\w, ]+?)(?:\(| =)/gm)].map((m) => m[1])
    expect(declared).toEqual([
      'app_of',
      'fmt',
      'meta_cache, meta_writes, meta_deletes',
      'meta_had_v',
      'meta_read',
      'meta_set',
      'start_tag',
    ])
    expect(luaNames(`${prelude}\nreturn fmt(start_tag(KEYS[1], ARGV[1], 1, 0))`).free.size).toBe(0)
  })

  it('would be caught missing a helper: a call to a helper left out is a free name', () => {
    const body = 'return fmt(start_tag(KEYS[1], ARGV[1], 1, 0))'
    const broken = preludeFor(body).replace(/^local function meta_set\(/m, 'local function meta_put(')
    expect([...luaNames(`${broken}\n${body}`).free.keys()]).toEqual(['meta_set'])
  })

  it('ignores a helper named only in a comment or a string', () => {
    expect(preludeFor("-- grant() is not called here\nreturn redis.call('GET', 'learn')")).not.toMatch(
      /local function (grant|learn)\b/,
    )
  })
})
