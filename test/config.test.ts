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

describe('object store', () => {
  const credentials = { RINGBASE_S3_ACCESS_KEY_ID: 'AKIDEXAMPLE', RINGBASE_S3_SECRET_ACCESS_KEY: 'secret-example' }

  test('the data dir by default; an s3:// URL selects a bucket and prefix, endpoint and credentials from the env', () => {
    expect(loadConfig({}, {}).objectStore).toEqual({ kind: 'local' })
    expect(
      loadConfig(
        { 'object-store': 's3://recordings-eu/ringbase/prod/' },
        { ...credentials, RINGBASE_S3_ENDPOINT: 'https://s3.example.test', RINGBASE_S3_REGION: 'eu-west-1' },
      ).objectStore,
    ).toEqual({
      kind: 's3',
      bucket: 'recordings-eu',
      prefix: 'ringbase/prod',
      endpoint: 'https://s3.example.test',
      region: 'eu-west-1',
      accessKeyId: 'AKIDEXAMPLE',
      secretAccessKey: 'secret-example',
    })
    expect(loadConfig({}, { ...credentials, RINGBASE_OBJECT_STORE: 's3://bucket' }).objectStore).toMatchObject({
      bucket: 'bucket',
      prefix: '',
      endpoint: undefined,
    })
  })

  test('a bad URL, a bad endpoint or missing credentials are refused with a clear message', () => {
    expect(() => loadConfig({ 'object-store': 'ftp://bucket' }, credentials)).toThrow(/s3:\/\/BUCKET/)
    expect(() => loadConfig({ 'object-store': 's3://Bad_Bucket' }, credentials)).toThrow(/s3:\/\/BUCKET/)
    expect(() =>
      loadConfig({ 'object-store': 's3://bucket' }, { ...credentials, RINGBASE_S3_ENDPOINT: 'minio:9000' }),
    ).toThrow(/RINGBASE_S3_ENDPOINT/)
    expect(() => loadConfig({ 'object-store': 's3://bucket' }, {})).toThrow(ConfigError)
    expect(() => loadConfig({ 'object-store': 's3://bucket' }, {})).toThrow(/RINGBASE_S3_SECRET_ACCESS_KEY/)
  })
})
