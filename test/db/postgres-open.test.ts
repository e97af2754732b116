import { expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/config'
import { openPostgres } from '../../src/db/open'

test('--database-url takes a postgres:// URL (or RINGBASE_DATABASE_URL); anything else is a configuration error', () => {
  expect(loadConfig({ 'database-url': 'postgres://ringbase@db.internal/ringbase' }, {}).databaseUrl).toBe(
    'postgres://ringbase@db.internal/ringbase',
  )
  expect(loadConfig({}, { RINGBASE_DATABASE_URL: 'postgresql://u:p@127.0.0.1:5433/x' }).databaseUrl).toBe(
    'postgresql://u:p@127.0.0.1:5433/x',
  )
  expect(loadConfig({}, {}).databaseUrl).toBeNull()
  for (const wrong of ['mysql://db/x', 'db.internal', 'postgres://'])
    expect(() => loadConfig({ 'database-url': wrong }, {})).toThrow(ConfigError)
})

test('a database that cannot be reached is named in the error, without its password', () => {
  let message = ''
  try {
    openPostgres('postgres://ringbase:S3cretPassw0rd@127.0.0.1:9/ringbase')
  } catch (error) {
    message = (error as Error).message
  }
  expect(message).toStartWith('PostgreSQL at postgresql://127.0.0.1:9/ringbase could not be opened: ')
  expect(message).not.toContain('S3cretPassw0rd')
})
