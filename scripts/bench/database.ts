import { PostgresDatabase } from '../../src/db/postgres/client'
import { startPostgres, type TestPostgres } from '../../test/support/postgres'

/**
 * Where a benchmark keeps its data: SQLite in its data dir, or with RINGBASE_BENCH_POSTGRES=1 PostgreSQL, a private
 * cluster on 127.0.0.1 started here (Debian's postgresql package, as the tests start it), or the empty database
 * RINGBASE_DATABASE_URL names.
 */
export type BenchDatabase = {
  label: string
  /** The URL of a new database `name` on PostgreSQL; null on SQLite. */
  create(name: string): string | null
  stop(): void
}

export async function benchDatabase(): Promise<BenchDatabase> {
  const given = process.env.RINGBASE_DATABASE_URL || null
  if (given) return { label: 'PostgreSQL (RINGBASE_DATABASE_URL)', create: () => given, stop() {} }
  if (process.env.RINGBASE_BENCH_POSTGRES !== '1') return { label: 'SQLite', create: () => null, stop() {} }
  const cluster: TestPostgres = await startPostgres()
  return {
    label: 'PostgreSQL (private cluster on 127.0.0.1)',
    create(name) {
      const admin = new PostgresDatabase(cluster.url)
      admin.exec(`CREATE DATABASE ${name}`)
      admin.close()
      return cluster.url.replace(/\/postgres$/, `/${name}`)
    },
    stop: () => cluster.stop(),
  }
}
