import { openPostgres } from '../../src/db/open'
import { PostgresDatabase } from '../../src/db/postgres/client'

/**
 * With RINGBASE_TEST_POSTGRES_URL (a cluster's `postgres` database, as test/postgres-api.test.ts sets it), each test app
 * gets a PostgreSQL database of its own instead of SQLite: a copy of one migrated once per test process.
 */
export const TEST_POSTGRES_URL = process.env.RINGBASE_TEST_POSTGRES_URL || null

let admin: PostgresDatabase | null = null
let template: string | null = null
let created = 0

const databaseUrl = (name: string) => {
  const url = new URL(TEST_POSTGRES_URL!)
  url.pathname = `/${name}`
  return url.toString()
}

function adminClient(): PostgresDatabase {
  admin ??= new PostgresDatabase(TEST_POSTGRES_URL!)
  return admin
}

/** A new, migrated, empty database's URL. */
export function freshTestDatabase(): string {
  const client = adminClient()
  if (template === null) {
    const name = `ringbase_template_${process.pid}`
    client.exec(`DROP DATABASE IF EXISTS ${name}`)
    client.exec(`CREATE DATABASE ${name}`)
    openPostgres(databaseUrl(name)).sqlite.close()
    template = name
  }
  const name = `ringbase_test_${process.pid}_${++created}`
  client.exec(`CREATE DATABASE ${name} TEMPLATE ${template}`)
  return databaseUrl(name)
}

/** Drops a database `freshTestDatabase` made (its connections closed first). */
export function dropTestDatabase(url: string): void {
  const name = new URL(url).pathname.slice(1)
  adminClient().exec(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}
