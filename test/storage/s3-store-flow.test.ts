import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestApp, type TestApp } from '../support/app'
import { compiledBinary } from '../support/compiled-binary'
import { createAgent as createCampaignAgent, createAriConfiguration, csvOf, uploadCsv } from '../support/campaigns'
import { createAgent, seedRun } from '../support/agents'
import { createRecording, lineToneWav } from '../support/recordings'
import { startS3Server, type TestS3Server } from '../support/s3-server'
import { configureModelsNeverAsked } from '../support/voice-models'

// The API's file flows with `--object-store s3://…` against a real S3-compatible server: every object lands in the
// bucket under the prefix, none in the data dir.
const PREFIX = 'installation-a'

let s3: TestS3Server
let t: TestApp
beforeAll(async () => {
  s3 = await startS3Server()
  t = createTestApp({ flags: { 'object-store': `s3://${s3.bucket}/${PREFIX}/` }, env: s3.env })
})
afterAll(async () => {
  t.close()
  await s3.close()
})

/** Files the local store would have written under the data dir (its empty folder for partial writes aside). */
const localObjects = () =>
  existsSync(join(t.dataDir, 'objects'))
    ? readdirSync(join(t.dataDir, 'objects'), { recursive: true, withFileTypes: true }).filter((entry) =>
        entry.isFile(),
      )
    : []

describe('with an S3 object store', () => {
  test('health reports the store as s3 and reachable', async () => {
    const health = await t.request('GET', '/api/v1/health', { key: null })
    expect(health.status).toBe(200)
    expect(health.body.object_store).toEqual({ kind: 's3', reachable: true })
  })

  test('a CSV uploaded through the signed URL lands in the bucket and a campaign is created from it', async () => {
    const workflowId = await createCampaignAgent(t)
    await createAriConfiguration(t)
    await configureModelsNeverAsked(t)
    const csv = csvOf(['phone_number'], [['+14155550100'], ['+14155550101']])
    const sourceId = await uploadCsv(t, csv)
    expect(s3.objectKeys(PREFIX)).toContain(sourceId)
    const campaign = await t.request('POST', '/api/v1/campaign/create', {
      body: { name: 'Bucket promo', source_type: 'csv', workflow_id: workflowId, source_id: sourceId },
    })
    expect(campaign.status).toBe(200)
    expect(campaign.body).toMatchObject({ state: 'draft', total_rows: 2 })
    expect(localObjects()).toEqual([])
  })

  test('an upload over its signed size is refused with 413 and nothing reaches the bucket', async () => {
    const before = s3.objectKeys(PREFIX)
    const grant = await t.request('POST', '/api/v1/s3/presigned-upload-url', {
      body: { file_name: 'small.csv', file_size: 10, content_type: 'text/csv' },
    })
    const chunks = ['phone_number\n', '+14155550100\n']
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const chunk = chunks.shift()
        if (chunk) controller.enqueue(new TextEncoder().encode(chunk))
        else controller.close()
      },
    })
    const put = await t.app.handle(
      new Request(grant.body.upload_url.replace(/^https?:\/\/[^/]+/, 'http://localhost'), {
        method: 'PUT',
        body,
        headers: { 'content-type': 'text/csv' },
      }),
    )
    expect(put.status).toBe(413)
    expect(s3.objectKeys(PREFIX)).toEqual(before)
  })

  test('a recording uploaded and created is stored in the bucket with its line audio', async () => {
    const created = await createRecording(t, 'greeting', lineToneWav(440, 300))
    expect(created.status).toBe(200)
    const storageKey = created.body.recordings[0].storage_key as string
    expect(s3.objectKeys(PREFIX)).toEqual(expect.arrayContaining([storageKey, `${storageKey}.line-8k.ulaw`]))
    expect(localObjects()).toEqual([])
  })

  test("a run's recording is downloaded from the bucket through its public link", async () => {
    const agent = await createAgent(t, 'Support')
    const audio = new Uint8Array([82, 73, 70, 70, 1, 2, 3, 4])
    await t.ctx.objects.put('recordings/1/77.wav', audio)
    const run = seedRun(t, {
      organizationId: 1,
      agent,
      outcome: { durationSeconds: 3, disposition: 'completed', cost: {}, usage: {} },
      artifacts: { recording: 'recordings/1/77.wav' },
    })
    const detail = (await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${run.id}`)).body
    const download = await t.app.handle(new Request(`http://localhost${new URL(detail.recording_public_url).pathname}`))
    expect(download.status).toBe(200)
    expect(download.headers.get('content-length')).toBe('8')
    expect(download.headers.get('content-type')).toContain('audio/')
    expect([...new Uint8Array(await download.arrayBuffer())]).toEqual([...audio])
  })

  test('the compiled ringbase backup --to-object-store puts the archive in the bucket; restore --from-object-store brings it back', async () => {
    const cli = async (args: string[]) => {
      const run = Bun.spawn([compiledBinary(), ...args], {
        env: { ...process.env, ...s3.env, RINGBASE_OBJECT_STORE: `s3://${s3.bucket}/${PREFIX}` },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const [out, err] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text()])
      return { exitCode: await run.exited, output: `${out}${err}` }
    }
    const backup = await cli(['backup', '--to-object-store', '--dir', t.dataDir])
    expect(backup.exitCode, backup.output).toBe(0)
    const key = /\/(backups\/ringbase-[^ ]+\.tar) /.exec(backup.output)?.[1]
    expect(key).toBeDefined()
    expect(s3.objectKeys(PREFIX)).toContain(key!)
    expect(localObjects()).toEqual([])

    const restored = mkdtempSync(join(tmpdir(), 'ringbase-restored-'))
    rmSync(restored, { recursive: true })
    try {
      const restore = await cli(['restore', '--from-object-store', key!, '--dir', restored])
      expect(restore.exitCode, restore.output).toBe(0)
      expect(existsSync(join(restored, 'ringbase.db'))).toBe(true)
      expect(readFileSync(join(restored, 'master.key'), 'utf8')).toBe(
        readFileSync(join(t.dataDir, 'master.key'), 'utf8'),
      )
      const missing = await cli(['restore', '--from-object-store', 'backups/none.tar', '--dir', `${restored}-other`])
      expect(missing.exitCode).toBe(2)
      expect(missing.output).toContain(`no backup backups/none.tar in s3://${s3.bucket}/${PREFIX}`)
    } finally {
      rmSync(restored, { recursive: true, force: true })
    }
  }, 120_000)

  test('with the bucket down: health says unreachable, an upload answers 502 and the URL stays usable', async () => {
    const grant = await t.request('POST', '/api/v1/s3/presigned-upload-url', {
      body: { file_name: 'later.csv', file_size: 13, content_type: 'text/csv' },
    })
    await s3.close()
    const health = await t.request('GET', '/api/v1/health', { key: null })
    expect(health.body.object_store).toEqual({ kind: 's3', reachable: false })
    const putOnce = () =>
      t.app.handle(
        new Request(grant.body.upload_url.replace(/^https?:\/\/[^/]+/, 'http://localhost'), {
          method: 'PUT',
          body: 'phone_number\n',
          headers: { 'content-type': 'text/csv' },
        }),
      )
    const put = await putOnce()
    expect(put.status).toBe(502)
    expect(await put.json()).toEqual({ detail: 'The object store could not be reached' })
    // Not 409 "already used": the failed PUT released the URL for another try.
    expect((await putOnce()).status).toBe(502)
    expect(t.logText()).not.toContain('S3RVER')
  })
})
