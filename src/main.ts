#!/usr/bin/env bun
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp, OPENAPI_PATH } from './api/app'
import { serveApi } from './api/server'
import { loadConsoleAssets, PACK_FILE_NAME } from './api/console/assets'
import { devConsole } from './api/console/dev'
import { ConfigError, databaseLabel, loadConfig, parseArgs, type Flags } from './config'
import { buildContext, startBackgroundServices, VERSION } from './boot'
import type { AppContext } from './context'
import { bootstrapInstallation, createApiKey, ensureOrganization, type ApiKeyScope } from './auth/keys'
import { closeLog, createLogger } from './log'
import { transaction } from './db/transaction'
import { checkHealth } from './health-check'
import { backupCommand, restoreCommand } from './backup-commands'

const USAGE = `ringbase ${VERSION}: self-hosted voice-agent platform

Usage:
  ringbase serve [--http HOST:PORT] [--dir DATA_DIR] [--public-url URL] [--ring-timeout SECONDS] [--http-idle-timeout SECONDS]
                 [--object-store local|s3://BUCKET/PREFIX] [--database-url postgres://USER@HOST/DATABASE]
  ringbase migrate [--dir DATA_DIR] [--database-url postgres://…]
  ringbase keys create --org NAME [--name KEY_NAME] [--scope admin|trigger] [--dir DATA_DIR] [--database-url postgres://…]
  ringbase health [--http HOST:PORT]
  ringbase backup --out FILE | --to-object-store [--dir DATA_DIR]
  ringbase restore --from FILE | --from-object-store KEY [--dir DATA_DIR]
  ringbase openapi
  ringbase version
`

async function serve(flags: Flags): Promise<void> {
  // Signals are handled from the start: one that comes while starting up stops the server as soon as it is up, so a
  // stop is always graceful, whenever it comes. A second one before the stop is over (a start-up or a stop that hangs)
  // exits at once.
  let stopRequested: string | null = null
  let requestStop = (signal: string) => {
    if (stopRequested) process.exit(1)
    stopRequested = signal
  }
  process.on('SIGINT', () => requestStop('SIGINT'))
  process.on('SIGTERM', () => requestStop('SIGTERM'))

  const config = loadConfig(flags)
  const ctx = buildContext(config)
  const bootstrapKey = bootstrapInstallation(ctx)
  if (bootstrapKey) {
    // The one time the key is ever shown: on stderr, for the person starting the server, so stdout stays the JSON log
    // (what a log collector reads) and no log line ever holds a key.
    process.stderr.write(
      `\n=== RINGBASE BOOTSTRAP ADMIN API KEY (organization 'default', shown once): ${bootstrapKey.api_key} ===\n\n`,
    )
  }
  // `npm run dev` (scripts/dev.ts) sets RINGBASE_CONSOLE_DEV=1: the console is reloaded as web/ changes.
  const dev =
    process.env.RINGBASE_CONSOLE_DEV === '1' ? devConsole(join(import.meta.dir, '..', 'dist', PACK_FILE_NAME)) : null
  const app = createApp(ctx, {
    precompile: true,
    console: dev ? dev.assets : await loadConsoleAssets(join(import.meta.dir, '..')),
    consoleDev: dev?.routes,
  })
  const background = await startBackgroundServices(ctx)
  // idleTimeout given explicitly: left to its default, Bun prints a plain-text warning for each request it times out.
  const server = serveApi(ctx, app, {
    hostname: config.httpHost,
    port: config.httpPort,
    idleTimeout: config.httpIdleTimeoutSeconds,
  })
  ctx.log.info(
    {
      url: `http://${config.httpHost}:${server.port}`,
      dataDir: config.dataDir,
      database: config.databaseUrl === null ? 'sqlite' : databaseLabel(config.databaseUrl),
      objectStore: ctx.objects.location,
      version: VERSION,
    },
    'listening',
  )

  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) process.exit(1)
    stopping = true
    ctx.log.info({ signal }, 'shutting down')
    await server.stop()
    // Each request's log line is written by an after-response hook that Elysia runs in an immediate queued with the
    // response: one more turn of that queue lets every finished request log before the log closes.
    await new Promise((resolve) => setImmediate(resolve))
    await background.stop()
    ctx.sqlite.close()
    ctx.log.info('stopped')
    await closeLog(ctx.log)
    process.exit(0)
  }
  requestStop = (signal) => void shutdown(signal)
  if (stopRequested) requestStop(stopRequested)
}

function withContext<T>(flags: Flags, run: (ctx: AppContext) => T): T {
  const config = loadConfig(flags)
  const ctx = buildContext(config, { log: createLogger('warn') })
  try {
    return run(ctx)
  } finally {
    ctx.sqlite.close()
  }
}

function keysCreate(flags: Flags): void {
  const org = flags.org
  if (typeof org !== 'string' || org.trim() === '') throw new ConfigError('keys create needs --org NAME')
  const scope = (flags.scope ?? 'admin') as ApiKeyScope
  if (scope !== 'admin' && scope !== 'trigger') throw new ConfigError('--scope must be admin or trigger')
  const name = typeof flags.name === 'string' ? flags.name : `${scope} key`
  const created = withContext(flags, (ctx) =>
    transaction(ctx, () => createApiKey(ctx, ensureOrganization(ctx, org.trim()), name, scope)),
  )
  process.stdout.write(`${created.api_key}\n`)
}

/** Builds the app on a throwaway data dir and prints the document it serves. */
async function printOpenApi(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ringbase-openapi-'))
  try {
    const ctx = buildContext(loadConfig({ dir: dataDir }, {}), { log: createLogger('silent') })
    const response = await createApp(ctx).handle(new Request(`http://localhost${OPENAPI_PATH}`))
    const document = `${JSON.stringify(await response.json(), null, 2)}\n`
    // Wait for the pipe to take it all: main() exits the process right after, which would cut a long write short.
    await new Promise<void>((resolve, reject) =>
      process.stdout.write(document, (error) => (error ? reject(error) : resolve())),
    )
    ctx.sqlite.close()
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

async function main(argv: string[]): Promise<number> {
  // The data dir holds call recordings, contacts and keys: whatever this process creates is its user's alone
  // (folders 0700, files 0600: the database, its WAL and SHM, objects, backups).
  process.umask(0o077)
  const { positional, flags } = parseArgs(argv)
  const [command, subcommand] = positional
  switch (command) {
    case 'serve':
      await serve(flags)
      return -1
    case 'migrate':
      withContext(flags, () => undefined)
      process.stdout.write('migrations applied\n')
      return 0
    case 'keys':
      if (subcommand !== 'create') break
      keysCreate(flags)
      return 0
    case 'health': {
      const config = loadConfig(flags)
      const result = await checkHealth(config.httpHost, config.httpPort)
      ;(result.ok ? process.stdout : process.stderr).write(`${result.message}\n`)
      return result.ok ? 0 : 1
    }
    case 'backup':
      await backupCommand(flags)
      return 0
    case 'restore':
      await restoreCommand(flags)
      return 0
    case 'openapi':
      await printOpenApi()
      return 0
    case 'version':
      process.stdout.write(`${VERSION}\n`)
      return 0
    case undefined:
    case 'help':
      process.stdout.write(USAGE)
      return 0
  }
  process.stderr.write(`unknown command: ${positional.join(' ')}\n\n${USAGE}`)
  return 2
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code)
  },
  (error) => {
    process.stderr.write(
      `ringbase: ${error instanceof ConfigError ? error.message : String(error?.message ?? error)}\n`,
    )
    process.exit(error instanceof ConfigError ? 2 : 1)
  },
)
