import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { encodeWav } from '../../src/lib/wav'
import { pcm16ToUlaw } from '../../src/voice/g711'
import { sine } from '../support/audio'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import {
  createRecording,
  g711Wav,
  lineToneWav,
  MP3_FIXTURE,
  putRecordingFile,
  toneWav,
  uploadRecordingFile,
} from '../support/recordings'

// Which audio a recording may be made of, over HTTP only: also run against the compiled binary (binary-http), where
// the WAV decoding must work in the executable too.

let t: HttpTestApp
beforeEach(async () => {
  t = await startHttpTestApp()
})
afterEach(() => t.close())

describe('accepted audio', () => {
  test('G.711 WAVs and MP3 become recordings of their length', async () => {
    const mp3 = await createRecording(t, 'mp3', new Uint8Array(readFileSync(MP3_FIXTURE)), { mimeType: 'audio/mpeg' })
    expect(mp3.status).toBe(200)
    expect(mp3.body.recordings[0].source_format).toMatchObject({ container: 'mp3', sample_rate: 16_000 })
    // Measured on the decoded audio (its silence trimmed): the half-second tone and the MP3 encoder's padding; against
    // the binary this proves minimp3's WASM decodes inside the executable.
    expect(mp3.body.recordings[0].duration_ms).toBeGreaterThanOrEqual(500)
    expect(mp3.body.recordings[0].duration_ms).toBeLessThan(600)
    const ulaw = await createRecording(t, 'ulaw', lineToneWav(500, 400))
    expect(ulaw.body.recordings[0]).toMatchObject({
      duration_ms: 400,
      source_format: { container: 'wav', encoding: 'ulaw', sample_rate: 8000, channels: 1 },
    })
  })

  test('an upload larger than granted is refused at the PUT', async () => {
    const grant = await t.request('POST', '/api/v1/workflow-recordings/upload-url', {
      body: { files: [{ filename: 'a.wav', file_size: 100 }] },
    })
    const put = await putRecordingFile(t, grant.body.items[0].upload_url, toneWav(440, 8000, 100))
    expect(put.status).toBe(413)
  })
})

describe('hostile files', () => {
  const refusedAt = async (bytes: Uint8Array, mimeType = 'audio/wav') => {
    const response = await createRecording(t, 'bad', bytes, { mimeType })
    expect(response.status).toBe(422)
    expect(response.body.detail[0].loc).toEqual(['body', 'recordings', 0, 'storage_key'])
    return response.body.detail[0].msg as string
  }

  test('garbage, an MP3 cut to its header, MP3 frames of noise, a WAV without data: 422 naming storage_key', async () => {
    const garbage = new Uint8Array(50_000).map((_, i) => (i * 7919) % 251)
    expect(await refusedAt(garbage)).toContain('Not a WAV or MP3 file')
    const mp3 = new Uint8Array(readFileSync(MP3_FIXTURE))
    expect(await refusedAt(mp3.subarray(0, 3), 'audio/mpeg')).toContain('MP3')
    // A sync word followed by noise: frame headers that lie about everything after them.
    const noise = garbage.map((byte, i) => (i % 417 === 0 ? 0xff : i % 417 === 1 ? 0xfb : byte))
    expect(await refusedAt(noise, 'audio/mpeg')).toContain('Not an MP3 file')
    expect(await refusedAt(toneWav(440, 8000, 100).subarray(0, 36))).toContain('WAV')
    expect(await refusedAt(encodeWav(new Int16Array(0), 8000))).toContain('no audio')
  })

  test('a WAV whose header claims more data than the file holds is read to its end', async () => {
    const wav = toneWav(700, 16_000, 300)
    new DataView(wav.buffer).setUint32(40, 0x7fff_0000, true)
    const response = await createRecording(t, 'liar', wav)
    expect(response.status).toBe(200)
    expect(Math.abs(response.body.recordings[0].duration_ms - 300)).toBeLessThan(30)
  })

  test('audio longer than five minutes is refused without decoding it all', async () => {
    // 301 s of 8 kHz µ-law fits in 2.4 MB, under the size cap.
    const long = g711Wav(pcm16ToUlaw(sine(300, 8000, 301_000)), 8000, 'ulaw')
    expect(await refusedAt(long)).toContain('longer than 300 seconds')
    // 700 copies of a half-second MP3 back to back: 1.6 MB, 350 s, refused from its frame headers.
    const mp3 = new Uint8Array(readFileSync(MP3_FIXTURE))
    const longMp3 = new Uint8Array(mp3.length * 700).map((_, i) => mp3[i % mp3.length])
    expect(await refusedAt(longMp3, 'audio/mpeg')).toContain('longer than 300 seconds')
  })

  test('a 0-byte upload is refused at the PUT, and cannot become a recording', async () => {
    const grant = await t.request('POST', '/api/v1/workflow-recordings/upload-url', {
      body: { files: [{ filename: 'empty.wav', file_size: 1 }] },
    })
    const put = await putRecordingFile(t, grant.body.items[0].upload_url, new Uint8Array(0))
    expect(put.status).toBe(400)
    const create = await t.request('POST', '/api/v1/workflow-recordings/', {
      body: { recordings: [{ recording_id: 'empty', storage_key: grant.body.items[0].storage_key }] },
    })
    expect(create.status).toBe(422)
    expect(create.body.detail[0].loc).toEqual(['body', 'recordings', 0, 'storage_key'])
  })

  test("a storage key not uploaded, or another organization's, is refused", async () => {
    const other = t.newOrg('other')
    const theirs = await uploadRecordingFile(t, toneWav(440, 8000, 200), { key: other.key })
    for (const storageKey of [theirs, 'workflow-recordings/1/nothing/here.wav', 'campaigns/1/x.csv']) {
      const response = await t.request('POST', '/api/v1/workflow-recordings/', {
        body: { recordings: [{ recording_id: 'x', storage_key: storageKey }] },
      })
      expect(response.status).toBe(422)
      expect(response.body.detail[0].loc).toEqual(['body', 'recordings', 0, 'storage_key'])
    }
  })
})
