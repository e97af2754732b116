import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PostgresDatabase } from '../../src/db/postgres/client'
import { startTcpProxy } from './tcp-proxy'

/** Where Debian's `postgresql` package puts the server binaries (one folder per major version). */
const DEBIAN_ROOT = '/usr/lib/postgresql'

/** The newest installed PostgreSQL's bin folder, or null when none is installed. */
export function postgresBinDir(): string | null {
  if (!existsSync(DEBIAN_ROOT)) return null
  const versions = readdirSync(DEBIAN_ROOT)
    .filter((name) => existsSync(join(DEBIAN_ROOT, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
  return versions.length > 0 ? join(DEBIAN_ROOT, versions[0], 'bin') : null
}

/**
 * Why PostgreSQL tests cannot run here, or null when they can. In CI (`CI` set) a missing PostgreSQL is a failure,
 * not a skip: .ci/run installs it.
 */
export function postgresMissing(): string | null {
  if (postgresBinDir()) return null
  if (process.env.CI)
    throw new Error(`PostgreSQL is not installed under ${DEBIAN_ROOT}: .ci/run should have installed it`)
  return `PostgreSQL tests skipped: no PostgreSQL under ${DEBIAN_ROOT} (apt-get install -y postgresql)`
}

export type TestPostgres = { url: string; stop(): void }

async function freePort(): Promise<number> {
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const { port } = listener
  listener.stop(true)
  return port
}

/**
 * A private PostgreSQL cluster in a temporary dir on 127.0.0.1 and a free port, trusting local connections. The
 * server refuses to run as root: when the tests run as root, the cluster belongs to the `postgres` user the Debian
 * package creates.
 */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir()
  if (!bin) throw new Error(postgresMissing() ?? 'PostgreSQL is not installed')
  const dir = mkdtempSync(join(tmpdir(), 'ringbase-pg-'))
  const asRoot = process.getuid?.() === 0
  const owner = asRoot ? Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim() : null
  if (asRoot && owner)
    chownSync(dir, Number(owner), Number(Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim()))
  const as = (command: string[]) => (asRoot ? ['runuser', '-u', 'postgres', '--', ...command] : command)
  const run = (command: string[]) => {
    const result = Bun.spawnSync(as(command), { stdout: 'pipe', stderr: 'pipe' })
    if (result.exitCode !== 0) throw new Error(`${command.join(' ')} failed: ${result.stderr.toString()}`)
  }
  const data = join(dir, 'data')
  const port = await freePort()
  run([join(bin, 'initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
  run([
    join(bin, 'pg_ctl'),
    '-D',
    data,
    '-l',
    join(dir, 'server.log'),
    '-w',
    '-o',
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off`,
    'start',
  ])
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop() {
      Bun.spawnSync(as([join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop']))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export type PostgresBehindProxy = {
  postgres: TestPostgres
  proxy: Awaited<ReturnType<typeof startTcpProxy>>
  /** The database's URL through the proxy. */
  url: string
  stop(): void
}

/** A private PostgreSQL with the database `name` created in it, reached through a TCP proxy a test can cut. */
export async function startPostgresBehindProxy(name: string): Promise<PostgresBehindProxy> {
  const postgres = await startPostgres()
  const admin = new PostgresDatabase(postgres.url)
  admin.exec(`CREATE DATABASE ${name}`)
  admin.close()
  const proxy = await startTcpProxy(new URL(postgres.url).port)
  const url = new URL(postgres.url)
  url.port = String(proxy.port)
  url.pathname = `/${name}`
  return {
    postgres,
    proxy,
    url: url.toString(),
    stop() {
      proxy.stop()
      postgres.stop()
    },
  }
}
