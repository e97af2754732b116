import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { compiledBinary } from './support/compiled-binary'
import { listeningUrl, outputOf, spawnServe, type ServeProcess } from './support/serve-process'

// Builds the single executable once, copies it ALONE into an empty directory and drives it like an admin would.
let workDir: string
let binary: string

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), 'ringbase-bin-'))
  binary = join(workDir, 'ringbase')
  copyFileSync(compiledBinary(), binary)
}, 120_000)

afterAll(() => rmSync(workDir, { recursive: true, force: true }))

/**
 * Runs `serve` in a new, empty directory for one test; the process is killed and the directory removed afterwards,
 * whatever the test did.
 */
async function inFreshServer(
  run: (server: ServeProcess, output: ReturnType<typeof outputOf>, dataHome: string) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  const dataHome = mkdtempSync(join(tmpdir(), 'ringbase-serve-'))
  const server = spawnServe(binary, [], env, dataHome)
  try {
    await run(server, outputOf(server.stdout), dataHome)
  } finally {
    server.kill('SIGKILL')
    rmSync(dataHome, { recursive: true, force: true })
  }
}

describe('compiled binary', () => {
  test('version and openapi work with nothing beside the binary', () => {
    const version = Bun.spawnSync([binary, 'version'], { cwd: workDir })
    expect(version.exitCode).toBe(0)
    expect(version.stdout.toString().trim()).toMatch(/^\d+\.\d+\.\d+$/)
    const openapi = Bun.spawnSync([binary, 'openapi'], { cwd: workDir })
    expect(openapi.exitCode).toBe(0)
    expect(JSON.parse(openapi.stdout.toString()).paths['/api/v1/health'].get.operationId).toBe(
      'health_api_v1_health_get',
    )
  })

  test('serves, migrates, creates keys while serving, and stops on SIGTERM', async () => {
    const server = Bun.spawn([binary, 'serve', '--http', '127.0.0.1:0'], {
      cwd: workDir,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const output = outputOf(server.stdout)
    const banner = outputOf(server.stderr)
    try {
      const { match, text } = await output.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/)
      expect(text).not.toContain('BOOTSTRAP')
      const bootstrapKey = (await banner.waitFor(/BOOTSTRAP ADMIN API KEY[^:]*: (rb_\S+) ===/)).match[1]
      expect(bootstrapKey).toBeDefined()
      const base = match[1]
      const health = await fetch(`${base}/api/v1/health`)
      expect(health.status).toBe(200)
      expect(((await health.json()) as { status: string }).status).toBe('ok')
      const healthCommand = Bun.spawn([binary, 'health', '--http', base.replace('http://', '')], { stdout: 'pipe' })
      expect(await healthCommand.exited).toBe(0)

      const keys = Bun.spawnSync([binary, 'keys', 'create', '--org', 'acme', '--scope', 'admin'], { cwd: workDir })
      expect(keys.exitCode).toBe(0)
      const newKey = keys.stdout.toString().trim()
      expect(newKey).toMatch(/^rb_[A-Za-z0-9_-]{43}$/)
      const listed = await fetch(`${base}/api/v1/user/api-keys`, { headers: { 'x-api-key': newKey } })
      expect(listed.status).toBe(200)
      expect(((await listed.json()) as { name: string }[])[0].name).toBe('admin key')
      const bootstrapList = await fetch(`${base}/api/v1/user/api-keys`, { headers: { 'x-api-key': bootstrapKey! } })
      expect(bootstrapList.status).toBe(200)
    } finally {
      server.kill('SIGTERM')
    }
    expect(await server.exited).toBe(0)
    // A graceful stop: background services (dialer, PBX connections, checkpoint worker) and the database closed, and
    // the log line of each request, the one answered just before the signal included, written before "stopped".
    const [beforeStop, afterStop] = (await output.all()).split('"msg":"stopped"')
    expect(afterStop).toBeDefined()
    expect(beforeStop.match(/"path":"\/api\/v1\/user\/api-keys","status":200,[^\n]*"msg":"request"/g)).toHaveLength(2)
  }, 30_000)

  test('a second start on the same data dir creates no new bootstrap key', async () => {
    const server = Bun.spawn([binary, 'serve', '--http', '127.0.0.1:0'], {
      cwd: workDir,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    try {
      const banner = outputOf(server.stderr)
      const { text } = await outputOf(server.stdout).waitFor(/"msg":"listening"/)
      expect(text).not.toContain('BOOTSTRAP')
      expect(banner.text()).not.toContain('BOOTSTRAP')
    } finally {
      server.kill('SIGTERM')
    }
    await server.exited
  }, 30_000)

  test('a start removes the recording audio a crash left behind, and keeps the data beside it', async () => {
    const dataHome = mkdtempSync(join(tmpdir(), 'ringbase-serve-'))
    const spillDir = join(dataHome, 'data', '.partial', 'call-recordings')
    mkdirSync(spillDir, { recursive: true })
    writeFileSync(join(spillDir, '42.pcm'), new Uint8Array(64_000))
    const server = spawnServe(binary, [], {}, dataHome)
    try {
      await outputOf(server.stdout).waitFor(/"msg":"listening"/)
      expect(readdirSync(spillDir)).toEqual([])
      expect(existsSync(join(dataHome, 'data', 'ringbase.db'))).toBe(true)
    } finally {
      server.kill('SIGKILL')
      rmSync(dataHome, { recursive: true, force: true })
    }
  }, 30_000)

  test(
    'SIGTERM while starting up: the server finishes starting, then stops gracefully with exit 0',
    () =>
      inFreshServer(async (server, output) => {
        // The first line comes from opening the database, long before the server listens.
        await output.waitFor(/"msg":"database migrated"/)
        server.kill('SIGTERM')
        expect(await server.exited).toBe(0)
        expect(await output.all()).toMatch(/"msg":"listening"[^]*"msg":"shutting down"[^]*"msg":"stopped"/)
      }),
    30_000,
  )

  test(
    'a second signal before the stop is over exits at once (exit 1), whether it comes while starting up or stopping',
    () =>
      inFreshServer(async (server, output) => {
        await output.waitFor(/"msg":"database migrated"/)
        // Two different signals: a second pending SIGTERM would merge into the first. Whether the server got to listening
        // in between is a race; either way the second signal ends it before a graceful stop could finish.
        server.kill('SIGINT')
        server.kill('SIGTERM')
        expect(await server.exited).toBe(1)
        expect(await output.all()).not.toContain('"msg":"stopped"')
      }),
    30_000,
  )

  test('SIGTERM during an upload: no new connections, the upload in flight completes and is kept, then exit 0', () => {
    const key = `rb_${'s'.repeat(43)}`
    return inFreshServer(
      async (server, output, dataHome) => {
        const base = await listeningUrl(output)
        const halves = ['phone_number,first_name\n+14155550100,Ada\n', '+14155550101,Grace\n']
        const size = halves.join('').length
        const grant = await fetch(`${base}/api/v1/s3/presigned-upload-url`, {
          // Not left open for reuse: the request after SIGTERM must need a new connection.
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json', connection: 'close' },
          body: JSON.stringify({ file_name: 'c.csv', file_size: size }),
        })
        expect(grant.status).toBe(200)
        const { upload_url: uploadUrl, file_key: fileKey } = (await grant.json()) as {
          upload_url: string
          file_key: string
        }
        const upload = new URL(uploadUrl)

        let sendRest!: () => void
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(halves[0]))
            sendRest = () => {
              controller.enqueue(new TextEncoder().encode(halves[1]))
              controller.close()
            }
          },
        })
        const put = fetch(`${base}${upload.pathname}${upload.search}`, {
          method: 'PUT',
          body,
          headers: { 'content-type': 'text/csv' },
        })
        // The handler has the request once its partial object exists.
        const partialDir = join(dataHome, 'data', 'objects', '.partial')
        while (!existsSync(partialDir) || readdirSync(partialDir).length === 0) await Bun.sleep(5)

        server.kill('SIGTERM')
        await output.waitFor(/"msg":"shutting down"/)
        expect(
          await fetch(`${base}/api/v1/health`).then(
            () => 'answered',
            () => 'refused',
          ),
        ).toBe('refused')

        sendRest()
        const response = await put
        expect(response.status).toBe(200)
        expect(await server.exited).toBe(0)
        expect(await output.all()).toContain('"msg":"stopped"')
        expect(readFileSync(join(dataHome, 'data', 'objects', fileKey), 'utf8')).toBe(halves.join(''))
      },
      { RINGBASE_BOOTSTRAP_API_KEY: key },
    )
  }, 30_000)
})
