import { expect } from 'bun:test'
import { encodeWav } from '../../src/lib/wav'
import { pcm16ToUlaw } from '../../src/voice/g711'
import type { HttpTestApp } from './http-app'
import { sine } from './audio'

/** A WAV of G.711 µ-law (format 7) or A-law (format 6) bytes, written here: the app's own writer only makes PCM. */
export function g711Wav(samples: Uint8Array, sampleRate: number, format: 'ulaw' | 'alaw'): Uint8Array {
  const bytes = new Uint8Array(44 + samples.length)
  const view = new DataView(bytes.buffer)
  const ascii = (at: number, text: string) => {
    for (let i = 0; i < 4; i++) bytes[at + i] = text.charCodeAt(i)
  }
  ascii(0, 'RIFF')
  view.setUint32(4, 36 + samples.length, true)
  ascii(8, 'WAVE')
  ascii(12, 'fmt ')
  view.setUint32(16, 16, true)
  view.setUint16(20, format === 'ulaw' ? 7 : 6, true)
  view.setUint16(22, 1, true)
  view.setUint32(24, sampleRate, true)
  view.setUint32(28, sampleRate, true)
  view.setUint16(32, 1, true)
  view.setUint16(34, 8, true)
  ascii(36, 'data')
  view.setUint32(40, samples.length, true)
  bytes.set(samples, 44)
  return bytes
}

/** A mono 16-bit WAV holding a tone. */
export const toneWav = (frequencyHz: number, sampleRate: number, durationMs: number) =>
  encodeWav(sine(frequencyHz, sampleRate, durationMs), sampleRate)

/** A µ-law WAV at 8 kHz holding a tone: exactly the line audio a call plays. */
export const lineToneWav = (frequencyHz: number, durationMs: number) =>
  g711Wav(pcm16ToUlaw(sine(frequencyHz, 8000, durationMs)), 8000, 'ulaw')

export const MP3_FIXTURE = new URL('../fixtures/tone-440hz-500ms.mp3', import.meta.url)

/** Gets an upload URL and PUTs the file; returns the storage key. */
export async function uploadRecordingFile(
  t: HttpTestApp,
  bytes: Uint8Array,
  options: { mimeType?: string; key?: string; filename?: string } = {},
) {
  const mimeType = options.mimeType ?? 'audio/wav'
  const grant = await t.request('POST', '/api/v1/workflow-recordings/upload-url', {
    key: options.key,
    body: {
      files: [{ filename: options.filename ?? 'clip.wav', mime_type: mimeType, file_size: Math.max(1, bytes.length) }],
    },
  })
  expect(grant.status).toBe(200)
  const item = grant.body.items[0]
  expect((await putRecordingFile(t, item.upload_url, bytes, mimeType)).status).toBe(200)
  return item.storage_key as string
}

/** PUTs a file to a signed upload URL, over real HTTP. */
export async function putRecordingFile(t: HttpTestApp, uploadUrl: string, bytes: Uint8Array, mimeType = 'audio/wav') {
  const { pathname, search } = new URL(uploadUrl)
  return fetch(`${await t.httpUrl()}${pathname}${search}`, {
    method: 'PUT',
    body: bytes,
    headers: { 'content-type': mimeType },
  })
}

/** Uploads and creates one recording; returns the response (200 with the recording, or the error). */
export async function createRecording(
  t: HttpTestApp,
  recordingId: string,
  bytes: Uint8Array,
  options: { mimeType?: string; key?: string; transcript?: string } = {},
) {
  const storageKey = await uploadRecordingFile(t, bytes, options)
  return t.request('POST', '/api/v1/workflow-recordings/', {
    key: options.key,
    body: {
      recordings: [
        {
          recording_id: recordingId,
          transcript: options.transcript ?? `Transcript of ${recordingId}`,
          storage_key: storageKey,
        },
      ],
    },
  })
}
