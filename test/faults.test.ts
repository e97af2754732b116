import { afterEach, beforeEach, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseProblems } from '../src/db/integrity'
import { callApi, SOURCE_COMMAND, startServe } from './support/serve-process'
import { CONFIGS_PATH } from './support/telephony'

// kill -9 in the middle of writes, restart on the same data dir: what was accepted (answered 200) is there exactly
// once, what was in flight is either wholly there or wholly absent, and SQLite finds the database sound.
// (Campaign dialling and calls: test/crash.test.ts and test/crash-recovery.test.ts.)

const KEY = 'rb_fault_test_bootstrap_key_0123456789ab'
let dataDir: string
let running: Awaited<ReturnType<typeof startServe>> | null = null
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'ringbase-faults-'))
})
afterEach(async () => {
  running?.server.kill('SIGKILL')
  await running?.server.exited
  running = null
  rmSync(dataDir, { recursive: true, force: true })
})

async function restart(): Promise<string> {
  if (running) {
    running.server.kill('SIGKILL')
    await running.server.exited
  }
  running = await startServe(SOURCE_COMMAND, ['--dir', dataDir], { RINGBASE_BOOTSTRAP_API_KEY: KEY })
  return running.url
}

const api = (method: string, path: string, body?: unknown) => callApi(running!.url, KEY, method, path, body)

async function grantUpload(csv: string): Promise<{ url: string; fileKey: string }> {
  const grant = await api('POST', '/api/v1/s3/presigned-upload-url', { file_name: 'leads.csv', file_size: csv.length })
  const upload = new URL(grant.upload_url)
  return { url: `${running!.url}${upload.pathname}${upload.search}`, fileKey: grant.file_key }
}

test('kill -9 during an upload: the finished upload is intact, the interrupted one absent, a new one works', async () => {
  await restart()
  const csv = 'phone_number\n+14155550100\n+14155550101\n'
  const done = await grantUpload(csv)
  expect((await fetch(done.url, { method: 'PUT', body: csv, headers: { 'content-type': 'text/csv' } })).status).toBe(
    200,
  )

  const interrupted = await grantUpload(csv)
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(csv.slice(0, 20)))
    },
  })
  const put = fetch(interrupted.url, { method: 'PUT', body, headers: { 'content-type': 'text/csv' } }).catch(
    () => 'cut',
  )
  const partialDir = join(dataDir, 'objects', '.partial')
  while (!existsSync(partialDir) || readdirSync(partialDir).length === 0) await Bun.sleep(5)
  await restart()
  expect(await put).toBe('cut')

  expect(readFileSync(join(dataDir, 'objects', done.fileKey), 'utf8')).toBe(csv)
  expect(existsSync(join(dataDir, 'objects', interrupted.fileKey))).toBe(false)
  expect(databaseProblems(dataDir)).toEqual([])
  const agent = await api('POST', '/api/v1/workflow/create/definition', {
    name: 'A',
    workflow_definition: {
      nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { prompt: 'Hi' } }],
      edges: [],
    },
  })
  const ari = { provider: 'ari', ari_endpoint: 'http://127.0.0.1:9', app_name: 'ringbase', app_password: 'pbx-secret' }
  await api('POST', CONFIGS_PATH, { name: 'PBX', config: ari, is_default_outbound: true })
  const create = (fileKey: string) =>
    fetch(`${running!.url}/api/v1/campaign/create`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ name: fileKey, source_type: 'csv', source_id: fileKey, workflow_id: agent.id }),
    })
  const fromDone = await create(done.fileKey)
  expect(fromDone.status).toBe(200)
  expect(((await fromDone.json()) as { total_rows: number }).total_rows).toBe(2)
  const fromInterrupted = await create(interrupted.fileKey)
  expect(fromInterrupted.status).toBeGreaterThanOrEqual(400)
  expect(fromInterrupted.status).toBeLessThan(500)

  const again = await grantUpload(csv)
  expect((await fetch(again.url, { method: 'PUT', body: csv, headers: { 'content-type': 'text/csv' } })).status).toBe(
    200,
  )
}, 60_000)

test('kill -9 during telephony configuration updates: the last accepted update or the one in flight, once, secrets readable', async () => {
  await restart()
  const config = (index: number) => ({
    provider: 'ari',
    ari_endpoint: `http://127.0.0.1:9/ari${index}`,
    app_name: 'ringbase',
    app_password: `pbx-secret-${index}`,
  })
  const created = await api('POST', CONFIGS_PATH, { name: 'v0', config: config(0), is_default_outbound: true })
  let accepted = 0
  for (let index = 1; index <= 15; index++) {
    await api('PUT', `${CONFIGS_PATH}/${created.id}`, { name: `v${index}`, config: config(index) })
    accepted = index
  }
  // One more in flight when the process dies.
  const inFlight = api('PUT', `${CONFIGS_PATH}/${created.id}`, {
    name: `v${accepted + 1}`,
    config: config(accepted + 1),
  }).catch(() => 'cut')
  await restart()
  await inFlight

  expect(databaseProblems(dataDir)).toEqual([])
  expect((await api('GET', CONFIGS_PATH)).configurations).toHaveLength(1)
  const stored = await api('GET', `${CONFIGS_PATH}/${created.id}`)
  expect([`v${accepted}`, `v${accepted + 1}`]).toContain(stored.name)
  const index = Number(stored.name.slice(1))
  // Name, endpoint and secret from the same update: the secret decrypts and matches it (masked but for 4 characters).
  expect(stored.credentials.ari_endpoint).toBe(`http://127.0.0.1:9/ari${index}`)
  expect(stored.credentials.app_password).toMatch(new RegExp(`^\\*+${`pbx-secret-${index}`.slice(-4)}$`))
  expect(stored.is_default_outbound).toBe(true)
}, 60_000)
