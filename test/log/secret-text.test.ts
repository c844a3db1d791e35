import { describe, expect, it } from 'vitest'
import { maskSecretText, maskUrl } from '../../src/log/secret-text.js'
import { serializeError } from '../../src/log/access-log.js'

describe('credentials inside free text are masked', () => {
  it.each([
    ['connect to redis://:pw123@10.0.0.1:6379/0 failed', 'connect to redis://:***@10.0.0.1:6379/0 failed'],
    ['rediss://default:pw123@cache:6380', 'rediss://default:***@cache:6380'],
    ['GET https://ghp_token123@example.org/x', 'GET https://***@example.org/x'],
    ['"url":"http://u:p%40ss@h/v2"', '"url":"http://u:***@h/v2"'],
    ['Authorization: Basic b3JnMTpzZWNyZXQ=', 'Authorization: Basic ***'],
    ['header Bearer abc.def.ghi-jkl', 'header Bearer ***'],
    ['/v2/accounts?apiKey=k123&page=2&password=p456', '/v2/accounts?apiKey=***&page=2&password=***'],
    ['{"command":{"name":"auth","args":["pw123"]}}', '{"command":{"name":"auth","args":["***"]}}'],
  ])('%s', (text, masked) => {
    expect(maskSecretText(text)).toBe(masked)
  })

  it('leaves ordinary text alone, e.g. an e-mail address and our own messages', () => {
    for (const text of [
      'mail ops@example.org',
      'The Authorization header is Basic but not base64("orgId:apiKey")',
      'size=12 page=3',
      'https://api.neoncrm.com/v2',
    ]) {
      expect(maskSecretText(text)).toBe(text)
    }
    expect(maskUrl('https://api.neoncrm.com/v2')).toBe('https://api.neoncrm.com/v2')
  })

  it('a logged ioredis error loses its command arguments and the URL password in its message', () => {
    const err = Object.assign(new Error('WRONGPASS at redis://:pw123@h:1'), {
      command: { name: 'auth', args: ['pw123'] },
    })
    const text = JSON.stringify(serializeError(err))
    expect(text).not.toContain('pw123')
    expect(serializeError(err)).toMatchObject({ command: { name: 'auth', args: '[redacted]' } })
  })
})
