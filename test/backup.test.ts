import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseProblems } from '../src/db/integrity'
import { notPrivate } from './support/file-modes'
import { callApi, SOURCE_COMMAND, startServe } from './support/serve-process'
import { CONFIGS_PATH, VALID_CONFIGS } from './support/telephony'

// `ringbase backup` of a populated data dir while its server keeps writing, `ringbase restore` into an empty one,
// and a server on the restored dir answers as the original did.

const KEY = 'rb_backup_test_bootstrap_key_0123456789ab'
const CSV = 'phone_number,first_name\n+14155550100,Ada\n+14155550101,Grace\n'
let home: string
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'ringbase-backup-'))
})
afterAll(() => rmSync(home, { recursive: true, force: true }))

const cli = (...args: string[]) => Bun.spawnSync([...SOURCE_COMMAND, ...args])

/** What a client sees of an instance: agents, the telephony configuration (secrets masked), the campaign, its CSV. */
async function visibleState(url: string, campaignId: number) {
  const api = (path: string) => callApi(url, KEY, 'GET', path)
  const link = await api(`/api/v1/campaign/${campaignId}/source-download-url`)
  const csv = await fetch(link.download_url.replace(/^https?:\/\/[^/]+/, url)).then((response) => response.text())
  const campaign = await api(`/api/v1/campaign/${campaignId}`)
  return {
    agents: await api('/api/v1/workflow/fetch'),
    configurations: await api(CONFIGS_PATH),
    campaign: { name: campaign.name, state: campaign.state, total_rows: campaign.total_rows },
    csv,
  }
}

test('backup while serving, restore into an empty dir: same agents, configuration secrets, campaign and files', async () => {
  const original = join(home, 'original')
  const restored = join(home, 'restored')
  const archive = join(home, 'ringbase.tar')
  const first = await startServe(SOURCE_COMMAND, ['--dir', original], { RINGBASE_BOOTSTRAP_API_KEY: KEY })
  let before: Awaited<ReturnType<typeof visibleState>>
  let campaignId: number
  try {
    const api = (method: string, path: string, body?: unknown) => callApi(first.url, KEY, method, path, body)
    const definition = {
      nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { prompt: 'Hi {{first_name}}' } }],
      edges: [],
    }
    const agent = await api('POST', '/api/v1/workflow/create/definition', {
      name: 'Backed up',
      workflow_definition: definition,
    })
    const carrier = await api('POST', CONFIGS_PATH, {
      name: 'Carrier',
      config: VALID_CONFIGS.twilio.config,
      is_default_outbound: true,
    })
    await api('POST', `${CONFIGS_PATH}/${carrier.id}/phone-numbers`, { address: '+14155550199' })
    const grant = await api('POST', '/api/v1/s3/presigned-upload-url', {
      file_name: 'leads.csv',
      file_size: CSV.length,
    })
    const put = await fetch(grant.upload_url.replace(/^https?:\/\/[^/]+/, first.url), {
      method: 'PUT',
      body: CSV,
      headers: { 'content-type': 'text/csv' },
    })
    expect(put.status).toBe(200)
    campaignId = (
      await api('POST', '/api/v1/campaign/create', {
        name: 'Leads',
        source_type: 'csv',
        source_id: grant.file_key,
        workflow_id: agent.id,
      })
    ).id
    before = await visibleState(first.url, campaignId)

    // The server keeps writing while the backup runs.
    const writes = Array.from({ length: 20 }, (_, index) =>
      api('POST', '/api/v1/workflow/create/definition', { name: `During ${index}`, workflow_definition: definition }),
    )
    const backup = Bun.spawn([...SOURCE_COMMAND, 'backup', '--dir', original, '--out', archive], {
      stdout: 'pipe',
      stderr: 'pipe',
    })
    expect(await backup.exited).toBe(0)
    await Promise.all(writes)
  } finally {
    first.server.kill('SIGTERM')
    await first.server.exited
  }
  expect(notPrivate(home).filter((line) => line.startsWith('ringbase.tar '))).toEqual([])
  expect(existsSync(`${archive}.partial`)).toBe(false)

  const restore = cli('restore', '--dir', restored, '--from', archive)
  expect(restore.exitCode, restore.stderr.toString()).toBe(0)
  expect(databaseProblems(restored)).toEqual([])
  expect(notPrivate(restored)).toEqual([])
  expect(readFileSync(join(restored, 'master.key'))).toEqual(readFileSync(join(original, 'master.key')))

  const second = await startServe(SOURCE_COMMAND, ['--dir', restored])
  try {
    const after = await visibleState(second.url, campaignId!)
    // Agents created while the backup ran may or may not be in it; everything from before is, unchanged.
    expect(after.agents.filter((agent: { name: string }) => !agent.name.startsWith('During'))).toEqual(before!.agents)
    expect(after.configurations).toEqual(before!.configurations)
    expect(after.campaign).toEqual(before!.campaign)
    expect(after.csv).toBe(CSV)
  } finally {
    second.server.kill('SIGTERM')
    await second.server.exited
  }
}, 60_000)

test('restore refuses a non-empty data dir and a file that is not a backup, and leaves nothing behind', () => {
  const occupied = join(home, 'occupied')
  const keys = cli('keys', 'create', '--org', 'acme', '--dir', occupied)
  expect(keys.exitCode).toBe(0)
  const backup = cli('backup', '--dir', occupied, '--out', join(home, 'occupied.tar'))
  expect(backup.exitCode).toBe(0)
  const refused = cli('restore', '--dir', occupied, '--from', join(home, 'occupied.tar'))
  expect(refused.exitCode).toBe(2)
  expect(refused.stderr.toString()).toContain('not empty')

  const notBackup = join(home, 'not-a-backup.tar')
  writeFileSync(notBackup, 'x'.repeat(2048))
  const target = join(home, 'never-created')
  const bad = cli('restore', '--dir', target, '--from', notBackup)
  expect(bad.exitCode).not.toBe(0)
  expect(existsSync(target)).toBe(false)
})
