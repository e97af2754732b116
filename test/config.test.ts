import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig, parseArgs } from '../src/config'

describe('config', () => {
  test('defaults', () => {
    const config = loadConfig({}, {})
    expect(config).toMatchObject({
      httpHost: '127.0.0.1',
      httpPort: 8000,
      publicUrl: 'http://127.0.0.1:8000',
      logLevel: 'info',
      bootstrapApiKey: null,
    })
    expect(config.dataDir.endsWith('/data')).toBe(true)
  })

  test('env overrides defaults and flags override env', () => {
    const env = {
      RINGBASE_HTTP: '0.0.0.0:9000',
      RINGBASE_DIR: '/tmp/env-dir',
      RINGBASE_PUBLIC_URL: 'https://env.test',
      RINGBASE_LOG_LEVEL: 'warn',
    }
    expect(loadConfig({}, env)).toMatchObject({
      httpHost: '0.0.0.0',
      httpPort: 9000,
      dataDir: '/tmp/env-dir',
      publicUrl: 'https://env.test',
      logLevel: 'warn',
    })
    const flags = parseArgs([
      'serve',
      '--http',
      '127.0.0.1:7000',
      '--dir=/tmp/flag-dir',
      '--public-url',
      'https://flag.test/',
    ]).flags
    expect(loadConfig(flags, env)).toMatchObject({
      httpPort: 7000,
      dataDir: '/tmp/flag-dir',
      publicUrl: 'https://flag.test',
    })
  })

  test('bad values are refused with a clear message', () => {
    expect(() => loadConfig({ http: 'nonsense' }, {})).toThrow(ConfigError)
    expect(() => loadConfig({}, { RINGBASE_LOG_LEVEL: 'loud' })).toThrow(/RINGBASE_LOG_LEVEL/)
    expect(() => loadConfig({}, { RINGBASE_BOOTSTRAP_API_KEY: 'short' })).toThrow(/at least 16/)
    expect(() => loadConfig({ 'public-url': 'ftp://x' }, {})).toThrow(/public-url/)
  })
})
