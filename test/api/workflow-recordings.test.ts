import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { decodeWav, encodeWav } from '../../src/lib/wav'
import { ulawToPcm16 } from '../../src/voice/g711'
import { createTestApp, type TestApp } from '../support/app'
import { loadPlayableRecordings } from '../../src/recordings/service'
import type { ObjectStore } from '../../src/storage/object-store'
import { createAgent, sampleDefinition } from '../support/agents'
import { dominantFrequency, sine } from '../support/audio'
import { createRecording, g711Wav, lineToneWav, MP3_FIXTURE, toneWav, uploadRecordingFile } from '../support/recordings'
import { startFakeModels } from '../support/fake-models'
import { configureFakeVoiceModels } from '../support/voice-models'

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

/** The line audio (8 kHz PCM) stored for a recording. */
async function lineAudio(recordingId: string, organizationId = 1): Promise<Int16Array> {
  const { loadLineAudio } = await import('../../src/recordings/service')
  const audio = await loadLineAudio(t.ctx, organizationId, recordingId)
  expect(audio).not.toBeNull()
  return ulawToPcm16(audio!.ulaw)
}

describe('upload and create', () => {
  test('a 16-bit WAV at 44.1 kHz stereo becomes 8 kHz line audio of the same tone and length', async () => {
    const left = sine(1000, 44_100, 800)
    const wav = encodeWav([left, left], 44_100)
    const response = await createRecording(t, 'welcome', wav, { transcript: 'Hello there' })
    expect(response.status).toBe(200)
    const [recording] = response.body.recordings
    expect(recording).toMatchObject({
      recording_id: 'welcome',
      transcript: 'Hello there',
      source_format: { container: 'wav', encoding: 'pcm16', sample_rate: 44_100, channels: 2 },
    })
    expect(Math.abs(recording.duration_ms - 800)).toBeLessThan(30)
    const line = await lineAudio('welcome')
    expect(dominantFrequency(line.subarray(800, 4800), 8000)).toBe(1000)
  })

  test('G.711 µ-law and A-law WAVs are accepted', async () => {
    expect((await createRecording(t, 'ulaw', lineToneWav(500, 400))).status).toBe(200)
    expect(dominantFrequency((await lineAudio('ulaw')).subarray(0, 3000), 8000)).toBe(500)
    const alawSilenceThenTone = g711Wav(new Uint8Array(8000).fill(0xd5), 8000, 'alaw')
    const alaw = await createRecording(t, 'alaw', alawSilenceThenTone)
    // A-law 0xD5 is digital silence: an all-silent clip is kept whole.
    expect(alaw.status).toBe(200)
    expect(alaw.body.recordings[0].duration_ms).toBe(1000)
    expect(Math.max(...(await lineAudio('alaw')).map(Math.abs))).toBeLessThan(16)
  })

  test('an MP3 (16 kHz joint stereo, 440 Hz for 500 ms) becomes line audio and a 16 kHz copy of that tone', async () => {
    const mp3 = await createRecording(t, 'mp3-tone', new Uint8Array(readFileSync(MP3_FIXTURE)), {
      mimeType: 'audio/mpeg',
    })
    expect(mp3.status).toBe(200)
    expect(mp3.body.recordings[0].source_format).toEqual({
      container: 'mp3',
      encoding: 'mp3',
      sample_rate: 16_000,
      channels: 2,
    })
    // The encoder's delay and padding add a few tens of milliseconds around the tone.
    expect(Math.abs(mp3.body.recordings[0].duration_ms - 500)).toBeLessThan(80)
    expect(dominantFrequency((await lineAudio('mp3-tone')).subarray(400, 3600), 8000)).toBe(440)
    const { loadLineAudio } = await import('../../src/recordings/service')
    const playable = (await loadLineAudio(t.ctx, 1, 'mp3-tone'))!
    expect(playable.pcm16k.length).toBe(playable.ulaw.length * 2)
    expect(dominantFrequency(playable.pcm16k.subarray(800, 7200), 16_000)).toBe(440)
  })

  test('a WAV gets a 16 kHz copy for the browser web call, trimmed like its line audio', async () => {
    const wav = encodeWav(new Int16Array([...new Int16Array(4800), ...sine(700, 48_000, 600)]), 48_000)
    expect((await createRecording(t, 'wide', wav)).status).toBe(200)
    const { loadLineAudio } = await import('../../src/recordings/service')
    const playable = (await loadLineAudio(t.ctx, 1, 'wide'))!
    expect(Math.abs(playable.pcm16k.length - 9600)).toBeLessThan(200)
    expect(playable.pcm16k.length).toBe(playable.ulaw.length * 2)
    expect(dominantFrequency(playable.pcm16k.subarray(1600, 8000), 16_000)).toBe(700)
  })

  test('upload-url validates files and gives free ids and org-scoped keys', async () => {
    const response = await t.request('POST', '/api/v1/workflow-recordings/upload-url', {
      body: {
        files: [
          { filename: 'a b.wav', file_size: 10 },
          { filename: 'x.wav', mime_type: 'audio/x-wav', file_size: 20 },
        ],
      },
    })
    expect(response.status).toBe(200)
    expect(response.body.items).toHaveLength(2)
    expect(response.body.items[0].recording_id).toMatch(/^[a-z0-9]{8}$/)
    expect(response.body.items[0].storage_key).toMatch(/^workflow-recordings\/1\/[0-9a-f-]{36}\/a_b\.wav$/)
    const cases: [unknown, (string | number)[]][] = [
      [{ files: [{ filename: 'big.wav', file_size: 5 * 1024 * 1024 + 1 }] }, ['body', 'files', 0, 'file_size']],
      [
        { files: [{ filename: 'doc.pdf', mime_type: 'application/pdf', file_size: 10 }] },
        ['body', 'files', 0, 'mime_type'],
      ],
      [{ files: [] }, ['body', 'files']],
    ]
    for (const [body, loc] of cases) {
      const refused = await t.request('POST', '/api/v1/workflow-recordings/upload-url', { body })
      expect(refused.status).toBe(422)
      expect(refused.body.detail[0].loc).toEqual(loc)
    }
  })
})

describe('list, rename, delete', () => {
  test('list is newest first and scoped to the organization', async () => {
    await createRecording(t, 'first', lineToneWav(400, 200))
    await createRecording(t, 'second', lineToneWav(400, 200))
    const other = t.newOrg('other')
    await createRecording(t, 'theirs', lineToneWav(400, 200), { key: other.key })
    const list = await t.request('GET', '/api/v1/workflow-recordings/')
    expect(list.status).toBe(200)
    expect(list.body.total).toBe(2)
    expect(list.body.recordings.map((r: { recording_id: string }) => r.recording_id)).toEqual(['second', 'first'])
  })

  test("a taken recording_id is 409; rename frees the old name; another org's id is 404", async () => {
    const created = (await createRecording(t, 'hello', lineToneWav(400, 200))).body.recordings[0]
    expect((await createRecording(t, 'hello', lineToneWav(400, 200))).status).toBe(409)
    await createRecording(t, 'taken', lineToneWav(400, 200))
    expect(
      (await t.request('PATCH', `/api/v1/workflow-recordings/${created.id}`, { body: { recording_id: 'taken' } }))
        .status,
    ).toBe(409)
    expect(
      (await t.request('PATCH', `/api/v1/workflow-recordings/${created.id}`, { body: { recording_id: 'bad name!' } }))
        .status,
    ).toBe(422)
    const renamed = await t.request('PATCH', `/api/v1/workflow-recordings/${created.id}`, {
      body: { recording_id: 'greeting_v2' },
    })
    expect(renamed.status).toBe(200)
    expect(renamed.body.recording_id).toBe('greeting_v2')
    const other = t.newOrg('other')
    expect(
      (
        await t.request('PATCH', `/api/v1/workflow-recordings/${created.id}`, {
          key: other.key,
          body: { recording_id: 'mine' },
        })
      ).status,
    ).toBe(404)
    expect((await t.request('DELETE', '/api/v1/workflow-recordings/greeting_v2', { key: other.key })).status).toBe(404)
    const deleted = await t.request('DELETE', '/api/v1/workflow-recordings/greeting_v2')
    expect(deleted.body).toEqual({ success: true, message: "Recording 'greeting_v2' deleted" })
    expect((await t.request('DELETE', '/api/v1/workflow-recordings/greeting_v2')).status).toBe(404)
    expect((await createRecording(t, 'greeting_v2', lineToneWav(400, 200))).status).toBe(200)
  })

  test('a recording an agent or tool names cannot be deleted or renamed, but its transcript can change', async () => {
    const created = (await createRecording(t, 'welcome', lineToneWav(400, 200))).body.recordings[0]
    const definition = sampleDefinition()
    Object.assign(definition.nodes[0].data, { greeting_type: 'audio', greeting_recording_id: 'welcome' })
    await createAgent(t, 'Greeter', undefined, definition)
    const deleted = await t.request('DELETE', '/api/v1/workflow-recordings/welcome')
    expect(deleted.status).toBe(409)
    expect(deleted.body.detail).toContain("agent 'Greeter'")
    expect(
      (await t.request('PATCH', `/api/v1/workflow-recordings/${created.id}`, { body: { recording_id: 'other' } }))
        .status,
    ).toBe(409)
    // its transcript may change meanwhile (agents name the recording_id, not its words); a rename with it may not
    const retold = await t.request('PATCH', `/api/v1/workflow-recordings/${created.id}`, {
      body: { recording_id: 'welcome', transcript: 'Welcome to Acme, how can I help?' },
    })
    expect(retold.status, retold.text).toBe(200)
    expect(retold.body).toMatchObject({ recording_id: 'welcome', transcript: 'Welcome to Acme, how can I help?' })
    const both = await t.request('PATCH', `/api/v1/workflow-recordings/${created.id}`, {
      body: { recording_id: 'other', transcript: 'Changed' },
    })
    expect(both.status).toBe(409)
    const listed = await t.request('GET', '/api/v1/workflow-recordings/')
    expect(listed.body.recordings.find((recording: { id: number }) => recording.id === created.id)).toMatchObject({
      recording_id: 'welcome',
      transcript: 'Welcome to Acme, how can I help?',
    })
    await createRecording(t, 'bye', lineToneWav(400, 200))
    const tool = await t.request('POST', '/api/v1/tools/', {
      body: {
        name: 'Hang up',
        definition: { schema_version: 1, type: 'end_call', config: { messageType: 'audio', audioRecordingId: 'bye' } },
      },
    })
    expect(tool.status).toBe(200)
    const refused = await t.request('DELETE', '/api/v1/workflow-recordings/bye')
    expect(refused.status).toBe(409)
    expect(refused.body.detail).toContain("tool 'Hang up'")
  })
})

describe('audio', () => {
  /** GET …/{recording_id}/audio with `key` (null: none), its answer's bytes. */
  async function audioOf(recordingId: string, key: string | null = t.adminKey) {
    const response = await t.app.handle(
      new Request(`http://localhost/api/v1/workflow-recordings/${recordingId}/audio`, {
        headers: key === null ? {} : { 'x-api-key': key },
      }),
    )
    return { response, bytes: new Uint8Array(await response.arrayBuffer()) }
  }

  test("a recording's audio is its 16 kHz copy as a WAV, for its organization only", async () => {
    const wav = encodeWav(sine(700, 48_000, 600), 48_000)
    expect((await createRecording(t, 'played', wav)).status).toBe(200)
    const { response, bytes } = await audioOf('played')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('audio/wav')
    expect(response.headers.get('cache-control')).toBe('private, no-store')
    const { format, pcm } = decodeWav(bytes)
    expect(format).toEqual({ sampleRate: 16_000, channels: 1, bitsPerSample: 16 })
    expect(Math.abs(pcm.length - 9600)).toBeLessThan(200)
    expect(dominantFrequency(pcm.subarray(1600, 8000), 16_000)).toBe(700)

    const other = t.newOrg('other')
    const theirs = await audioOf('played', other.key)
    expect(theirs.response.status).toBe(404)
    expect(JSON.parse(new TextDecoder().decode(theirs.bytes))).toEqual({ detail: "Recording 'played' not found" })
    expect((await audioOf('nowhere')).response.status).toBe(404)
    expect((await audioOf('played', null)).response.status).toBe(401)
    expect((await audioOf('played', t.newOrg('default', 'trigger').key)).response.status).toBe(403)
  })

  test('a recording made before the 16 kHz copy existed plays its line audio upsampled', async () => {
    const created = await createRecording(t, 'older', encodeWav(sine(700, 48_000, 600), 48_000))
    expect(created.status).toBe(200)
    const storageKey: string = created.body.recordings[0].storage_key
    const wideCopy = `${storageKey}.wide-16k.pcm`
    expect(await t.ctx.objects.exists(wideCopy)).toBe(true)
    await t.ctx.objects.delete(wideCopy)
    const { response, bytes } = await audioOf('older')
    expect(response.status).toBe(200)
    const { format, pcm } = decodeWav(bytes)
    expect(format.sampleRate).toBe(16_000)
    expect(Math.abs(pcm.length - 9600)).toBeLessThan(200)
    expect(dominantFrequency(pcm.subarray(1600, 8000), 16_000)).toBe(700)
  })
})

describe('agents and tools naming recordings', () => {
  test('an agent naming a missing recording is 422 naming the field, at save and in prompts', async () => {
    const definition = sampleDefinition()
    Object.assign(definition.nodes[0].data, { greeting_type: 'audio', greeting_recording_id: 'nope' })
    Object.assign(definition.nodes[1].data, { prompt: 'Answer with RECORDING_ID: missing_clip [Goodbye] when done.' })
    Object.assign(definition.edges[0].data, { transition_speech_type: 'audio', transition_speech_recording_id: 'gone' })
    const response = await t.request('POST', '/api/v1/workflow/create/definition', {
      body: { name: 'A', workflow_definition: definition },
    })
    expect(response.status).toBe(422)
    const errors = response.body.detail.errors.map(
      (error: { id: string; field: string }) => `${error.id}:${error.field}`,
    )
    expect(errors).toEqual(['1:data.greeting_recording_id', '2:data.prompt', '1-2:data.transition_speech_recording_id'])
    for (const id of ['nope', 'missing_clip', 'gone'])
      expect((await createRecording(t, id, lineToneWav(400, 200))).status).toBe(200)
    expect(
      (
        await t.request('POST', '/api/v1/workflow/create/definition', {
          body: { name: 'A', workflow_definition: definition },
        })
      ).status,
    ).toBe(200)
  })

  test("a tool naming a missing recording is 422 at its config field; another org's recording does not count", async () => {
    const other = t.newOrg('other')
    await createRecording(t, 'theirs', lineToneWav(400, 200), { key: other.key })
    const response = await t.request('POST', '/api/v1/tools/', {
      body: {
        name: 'Hang up',
        definition: {
          schema_version: 1,
          type: 'end_call',
          config: { messageType: 'audio', audioRecordingId: 'theirs' },
        },
      },
    })
    expect(response.status).toBe(422)
    expect(response.body.detail[0].loc).toEqual(['body', 'definition', 'end_call', 'config', 'audioRecordingId'])
  })
})

describe('transcribe', () => {
  test("an uploaded file goes to the organization's speech to text as 16 kHz audio; nothing configured is a 400", async () => {
    const storageKey = await uploadRecordingFile(t, toneWav(440, 44_100, 600))
    const unconfigured = await t.request('POST', '/api/v1/workflow-recordings/transcribe', {
      body: { storage_key: storageKey },
    })
    expect(unconfigured.status).toBe(400)
    expect(unconfigured.body.detail).toContain('speech to text')
    const models = startFakeModels()
    try {
      await configureFakeVoiceModels(t, models)
      models.transcription.queue({ text: 'Welcome to Acme.' })
      const response = await t.request('POST', '/api/v1/workflow-recordings/transcribe', {
        body: { storage_key: storageKey, language: 'en' },
      })
      expect(response.status).toBe(200)
      expect(response.body).toEqual({ transcript: 'Welcome to Acme.' })
      const [request] = models.requestsTo('/audio/transcriptions')
      expect(request.body.language).toBe('en')
      expect(request.audio!.format.sampleRate).toBe(16_000)
      expect(Math.abs(request.audio!.pcm.length - 9600)).toBeLessThan(400)
      models.transcription.queue({ fail: { status: 500, body: { error: 'down' } } })
      expect(
        (await t.request('POST', '/api/v1/workflow-recordings/transcribe', { body: { storage_key: storageKey } }))
          .status,
      ).toBe(502)
      const other = t.newOrg('other')
      expect(
        (
          await t.request('POST', '/api/v1/workflow-recordings/transcribe', {
            key: other.key,
            body: { storage_key: storageKey },
          })
        ).status,
      ).toBe(422)
    } finally {
      models.stop()
    }
  })
})

describe('loaded for a run', () => {
  test('a recording the store does not answer for is left out after a short wait; the others are loaded', async () => {
    expect((await createRecording(t, 'kept', lineToneWav(400, 200))).status).toBe(200)
    expect((await createRecording(t, 'stalled', lineToneWav(500, 200))).status).toBe(200)
    const { line_audio_key: stalledKey } = t.ctx.sqlite
      .query<{ line_audio_key: string }, []>(
        "SELECT line_audio_key FROM workflow_recordings WHERE recording_id = 'stalled'",
      )
      .get()!
    const store = t.ctx.objects
    // A bucket that takes the request for that recording's audio and never answers.
    const silentForOne: ObjectStore = {
      ...store,
      get: (key) => (key.startsWith(stalledKey) ? new Promise(() => {}) : store.get(key)),
    }
    const loaded = await loadPlayableRecordings({ ...t.ctx, objects: silentForOne }, 1, ['kept', 'stalled', 'absent'])
    expect([...loaded.keys()]).toEqual(['kept'])
    expect(loaded.get('kept')!.ulaw.length).toBeGreaterThan(0)
  })
})
