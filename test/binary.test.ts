import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// Builds the single executable once, copies it ALONE into an empty directory and drives it like an admin would.
let workDir: string
let binary: string

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), 'ringbase-bin-'))
  const built = join(mkdtempSync(join(tmpdir(), 'ringbase-build-')), 'ringbase')
  const build = Bun.spawnSync([process.execPath, join(import.meta.dir, '..', 'scripts', 'build.ts'), built], { stdout: 'pipe', stderr: 'pipe' })
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`)
  binary = join(workDir, 'ringbase')
  copyFileSync(built, binary)
  rmSync(join(built, '..'), { recursive: true, force: true })
}, 120_000)

afterAll(() => rmSync(workDir, { recursive: true, force: true }))

async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<{ match: RegExpMatchArray; text: string }> {
  const reader = stream.getReader()
  const decoder = new TextDecoder()
  let text = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`stream ended before ${pattern}: ${text}`)
    text += decoder.decode(value)
    const match = text.match(pattern)
    if (match) {
      reader.releaseLock()
      return { match, text }
    }
  }
}

describe('compiled binary', () => {
  test('version and openapi work with nothing beside the binary', () => {
    const version = Bun.spawnSync([binary, 'version'], { cwd: workDir })
    expect(version.exitCode).toBe(0)
    expect(version.stdout.toString().trim()).toMatch(/^\d+\.\d+\.\d+$/)
    const openapi = Bun.spawnSync([binary, 'openapi'], { cwd: workDir })
    expect(openapi.exitCode).toBe(0)
    expect(JSON.parse(openapi.stdout.toString()).paths['/api/v1/health']).toBeDefined()
  })

  test('serves, migrates, creates keys while serving, and stops on SIGTERM', async () => {
    const server = Bun.spawn([binary, 'serve', '--http', '127.0.0.1:0'], { cwd: workDir, stdout: 'pipe', stderr: 'pipe' })
    try {
      const { match, text } = await readUntil(server.stdout, /"url":"(http:\/\/127\.0\.0\.1:\d+)"/)
      const bootstrapKey = text.match(/BOOTSTRAP ADMIN API KEY[^:]*: (rb_\S+) ===/)?.[1]
      expect(bootstrapKey).toBeDefined()
      const base = match[1]
      const health = await fetch(`${base}/api/v1/health`)
      expect(health.status).toBe(200)
      expect(((await health.json()) as { status: string }).status).toBe('ok')

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
  }, 30_000)

  test('a second start on the same data dir creates no new bootstrap key', async () => {
    const server = Bun.spawn([binary, 'serve', '--http', '127.0.0.1:0'], { cwd: workDir, stdout: 'pipe', stderr: 'pipe' })
    try {
      const { text } = await readUntil(server.stdout, /"msg":"listening"/)
      expect(text).not.toContain('BOOTSTRAP')
    } finally {
      server.kill('SIGTERM')
    }
    await server.exited
  }, 30_000)
})
