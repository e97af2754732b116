import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import type { manualClock } from '../../src/lib/clock'
import { removeWhatNothingTook, startUnusedUploadSweeper } from '../../src/background'
import { uploads } from '../../src/db/schema/campaigns'
import { knowledgeBaseDocuments } from '../../src/db/schema/knowledge'
import { removeUnusedUploads, UNUSED_UPLOAD_TTL_MS } from '../../src/storage/uploads'
import { createTestApp, type TestApp } from '../support/app'
import { createAriConfiguration, uploadCsv } from '../support/campaigns'
import { inProcessClient, MIME } from '../support/knowledge'
import { lineToneWav, uploadRecordingFile } from '../support/recordings'
import { createAgent } from '../support/agents'
import { waitFor } from '../support/wait'

/**
 * An upload granted and never taken by what it was for (a campaign, a knowledge-base document, a recording) is removed,
 * file and row, a day after its grant (and a document whose file never came, its row); one that was taken is kept for
 * good.
 */

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

const clock = () => t.ctx.clock as ReturnType<typeof manualClock>
const stored = (fileKey: string) => t.ctx.objects.exists(fileKey)

async function grantedDocument(filename: string) {
  const client = inProcessClient(t)
  const grant = await client.request('POST', '/api/v1/knowledge-base/upload-url', {
    key: t.adminKey,
    body: { filename, mime_type: MIME.txt },
  })
  expect(grant.status, grant.text).toBe(200)
  const put = await client.put(grant.body.upload_url, new TextEncoder().encode('Refunds within 30 days.'), MIME.txt)
  expect(put.status, put.text).toBe(200)
  const process = () =>
    t.request('POST', '/api/v1/knowledge-base/process-document', {
      body: { document_uuid: grant.body.document_uuid, s3_key: grant.body.s3_key, retrieval_mode: 'full_document' },
    })
  return { fileKey: grant.body.s3_key as string, process }
}

const createCampaign = async (fileKey: string) => {
  const agent = await createAgent(t, `Agent ${fileKey.slice(-12)}`)
  return t.request('POST', '/api/v1/campaign/create', {
    body: { name: 'Spring', workflow_id: agent.id, source_type: 'csv', source_id: fileKey },
  })
}

const createRecordingFrom = (storageKey: string, recordingId: string) =>
  t.request('POST', '/api/v1/workflow-recordings/', {
    body: { recordings: [{ recording_id: recordingId, transcript: 'Hello', storage_key: storageKey }] },
  })

/** `count` uploads of a new organization, stored and granted a day and a minute ago: the next pass removes them. */
async function grantedLongAgo(count: number): Promise<string[]> {
  const { organizationId } = t.newOrg('Bulk')
  const fileKeys = Array.from({ length: count }, (_, index) => `uploads/${organizationId}/bulk-${index}.csv`)
  for (const fileKey of fileKeys) await t.ctx.objects.put(fileKey, 'phone_number\n')
  const grantedAt = new Date(clock().now()).toISOString()
  const row = { organizationId, fileName: 'bulk.csv', contentType: 'text/csv', declaredSize: 13, size: 13 }
  t.ctx.db
    .insert(uploads)
    .values(fileKeys.map((fileKey) => ({ ...row, fileKey, createdAt: grantedAt, completedAt: grantedAt })))
    .run()
  clock().advance(UNUSED_UPLOAD_TTL_MS + 60_000)
  return fileKeys
}

const uploadsLeft = () =>
  t.ctx.db
    .select({ fileKey: uploads.fileKey })
    .from(uploads)
    .all()
    .map(({ fileKey }) => fileKey)

describe('uploads nothing took', () => {
  test('are kept for a day after their grant, then removed with their file', async () => {
    const csv = await uploadCsv(t, 'phone_number\n+14155550100\n')
    expect(await stored(csv)).toBe(true)
    clock().advance(UNUSED_UPLOAD_TTL_MS - 60_000)
    expect(await removeUnusedUploads(t.ctx)).toBe(0)
    expect(await stored(csv)).toBe(true)
    clock().advance(120_000)
    expect(await removeUnusedUploads(t.ctx)).toBe(1)
    expect(await stored(csv)).toBe(false)
    // gone for what would take it now too: not found, nothing dialled
    const late = await createCampaign(csv)
    expect(late.status).toBe(400)
    expect(late.body.detail).toContain('not found')
    expect(t.logText()).toContain('removed uploads nothing took within a day')
  })

  test('taken by a campaign, a document or a recording: kept; the others of the same day removed', async () => {
    const takenCsv = await uploadCsv(t, 'phone_number,first_name\n+14155550100,Ada\n')
    const leftCsv = await uploadCsv(t, 'phone_number\n+14155550101\n')
    await createAriConfiguration(t)
    const campaign = await createCampaign(takenCsv)
    expect(campaign.status, campaign.text).toBe(200)
    // a file the campaign refused (the agent's {{first_name}} has no column) was not taken
    const refusedCampaign = await createCampaign(leftCsv)
    expect(refusedCampaign.status).toBe(400)
    expect(refusedCampaign.body.detail).toContain('first_name')

    const takenDocument = await grantedDocument('kept.txt')
    expect((await takenDocument.process()).status).toBe(200)
    const leftDocument = await grantedDocument('left.txt')

    const takenRecording = await uploadRecordingFile(t, lineToneWav(440, 300))
    expect((await createRecordingFrom(takenRecording, 'kept')).status).toBe(200)
    const leftRecording = await uploadRecordingFile(t, lineToneWav(440, 300))

    clock().advance(UNUSED_UPLOAD_TTL_MS + 60_000)
    expect(await removeUnusedUploads(t.ctx)).toBe(3)
    for (const kept of [takenCsv, takenDocument.fileKey, takenRecording]) expect(await stored(kept)).toBe(true)
    for (const removed of [leftCsv, leftDocument.fileKey, leftRecording]) expect(await stored(removed)).toBe(false)
    expect(await removeUnusedUploads(t.ctx)).toBe(0)

    // what still points at a removed upload is refused with the reason, not a 500
    expect((await leftDocument.process()).status).toBe(409)
    const recording = await createRecordingFrom(leftRecording, 'late')
    expect(recording.status).toBe(422)
    expect(recording.body.detail[0].loc).toEqual(['body', 'recordings', 0, 'storage_key'])
    // what was taken still works: the campaign's source is there, the recording plays
    expect((await t.request('GET', `/api/v1/campaign/${campaign.body.id}/source-download-url`)).status).toBe(200)
    expect((await t.request('GET', '/api/v1/workflow-recordings/kept/audio')).status).toBe(200)

    // the hourly pass also drops the document whose file never came (its row, hidden as `uploading`)
    const statuses = () =>
      t.ctx.db
        .select({ file: knowledgeBaseDocuments.fileKey, status: knowledgeBaseDocuments.processingStatus })
        .from(knowledgeBaseDocuments)
        .all()
    expect(statuses()).toContainEqual({ file: leftDocument.fileKey, status: 'uploading' })
    await removeWhatNothingTook(t.ctx)
    expect(statuses()).toEqual([{ file: takenDocument.fileKey, status: 'pending' }])
  })

  test('one pass removes them all, batch after batch', async () => {
    const fileKeys = await grantedLongAgo(230)
    expect(await removeUnusedUploads(t.ctx)).toBe(230)
    expect(uploadsLeft()).toEqual([])
    for (const fileKey of fileKeys) expect(await stored(fileKey)).toBe(false)
  })

  test('the periodic pass (every 20 ms here): a store that fails puts the rows back, is logged once, and they go when it answers again', async () => {
    const fileKeys = await grantedLongAgo(230)
    // the bucket stops answering after 150 files: the 80 uploads not removed stay listed, their files kept
    const removeObject = t.ctx.objects.delete.bind(t.ctx.objects)
    let deletes = 0
    let refused = 0
    t.ctx.objects.delete = async (fileKey) => {
      if (++deletes > 150) throw new Error(`bucket unreachable (${++refused})`)
      await removeObject(fileKey)
    }
    const sweeper = startUnusedUploadSweeper(t.ctx, 20)
    // a failing pass claims its rows and puts them back without waiting on anything, so between passes all is settled
    await waitFor('three failing passes', () => refused >= 3)
    const left = uploadsLeft()
    expect(left).toHaveLength(80)
    for (const fileKey of fileKeys) expect(await stored(fileKey)).toBe(left.includes(fileKey))
    expect(t.logText().split('unused uploads could not be removed').length - 1).toBe(1)

    t.ctx.objects.delete = removeObject
    await waitFor('the rest removed', () => uploadsLeft().length === 0)
    await waitFor('the recovery logged', () => t.logText().includes('unused uploads are removed again'))
    await sweeper.stop()
    for (const fileKey of fileKeys) expect(await stored(fileKey)).toBe(false)
  })
})
