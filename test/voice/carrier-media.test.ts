import { describe, expect, test } from 'bun:test'
import { createCarrierMediaTransport, type MediaFraming } from '../../src/voice/carrier-media'
import { pcm16ToUlaw, ulawToPcm16 } from '../../src/voice/g711'
import type { MarkOutcome, MediaClose } from '../../src/voice/media-transport'

/** Each carrier's media framing at the message level, against a socket that records what the transport sends. */

function harness(framing: MediaFraming) {
  const sent: (string | Uint8Array)[] = []
  const closes: { code?: number; reason?: string }[] = []
  const transport = createCarrierMediaTransport(
    framing,
    {
      send: (data) => {
        sent.push(data)
      },
      close: (code, reason) => {
        closes.push({ code, reason })
      },
    },
    { now: () => 1234 },
  )
  const heard: { ulaw: Uint8Array; at: number }[] = []
  transport.onAudio((ulaw, at) => heard.push({ ulaw, at }))
  const ended: MediaClose[] = []
  transport.onClose((close) => ended.push(close))
  const json = () =>
    sent.filter((message): message is string => typeof message === 'string').map((message) => JSON.parse(message))
  return { transport, sent, closes, heard, ended, json }
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64')
const ulawTone = (length: number) => Uint8Array.from({ length }, (_, index) => (index * 7) % 256)
const settled = async (promise: Promise<MarkOutcome>) =>
  Promise.race([promise, Bun.sleep(5).then(() => 'pending' as const)])

describe('twilio framing (Twilio, Cloudonix)', () => {
  test('agent audio waits for start (its streamSid), then goes out as base64 µ-law media with marks', async () => {
    const { transport, json } = harness('twilio')
    const audio = ulawTone(320)
    transport.send(audio)
    const mark = transport.mark()
    expect(json()).toEqual([])
    transport.receive(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }))
    transport.receive(JSON.stringify({ event: 'start', streamSid: 'MZ1', start: { streamSid: 'MZ1', callSid: 'CA1' } }))
    expect(transport.streamId).toBe('MZ1')
    expect(json()).toEqual([
      { event: 'media', streamSid: 'MZ1', media: { payload: b64(audio) } },
      { event: 'mark', streamSid: 'MZ1', mark: { name: 'ringbase-1' } },
    ])
    expect(await settled(mark)).toBe('pending')
    transport.receive(JSON.stringify({ event: 'mark', streamSid: 'MZ1', mark: { name: 'ringbase-1' } }))
    expect(await mark).toBe('played')
  })

  test('caller media arrives as µ-law with its arrival time; clear drops pending marks; stop ends the stream', async () => {
    const { transport, json, heard, ended, closes } = harness('twilio')
    transport.receive(JSON.stringify({ event: 'start', start: { streamSid: 'MZ2' } }))
    const caller = ulawTone(160)
    transport.receive(
      JSON.stringify({
        event: 'media',
        media: { track: 'inbound', chunk: '1', timestamp: '20', payload: b64(caller) },
      }),
    )
    expect(heard).toEqual([{ ulaw: caller, at: 1234 }])
    const first = transport.mark()
    const second = transport.mark()
    transport.receive(JSON.stringify({ event: 'mark', mark: { name: 'ringbase-1' } }))
    expect(await first).toBe('played')
    transport.flush()
    expect(await second).toBe('flushed')
    expect(json().at(-1)).toEqual({ event: 'clear', streamSid: 'MZ2' })
    transport.receive(JSON.stringify({ event: 'stop', stop: { callSid: 'CA1' } }))
    expect(ended).toEqual([{ code: 1000, reason: 'stream stopped', initiatedBy: 'remote' }])
    expect(closes).toEqual([{ code: 1000, reason: 'stream stopped' }])
    expect(await transport.mark()).toBe('closed')
  })

  test("close() by the app is reported as the app's; garbage and unknown events are ignored", () => {
    const { transport, ended, heard } = harness('twilio')
    transport.receive('not json')
    transport.receive(new Uint8Array([1, 2, 3]))
    transport.receive(JSON.stringify({ event: 'dtmf', dtmf: { digit: '5' } }))
    expect(heard).toEqual([])
    transport.close()
    transport.socketClosed(1000, '')
    expect(ended).toEqual([{ code: 1000, reason: 'closed by the application', initiatedBy: 'app' }])
  })
})

describe('exotel framing', () => {
  test('caller audio is 16-bit PCM 8 kHz, turned into µ-law; agent audio goes out as PCM in multiples of 320 bytes', async () => {
    const { transport, json, heard } = harness('exotel')
    transport.receive(
      JSON.stringify({
        event: 'start',
        stream_sid: 'MZx',
        start: { stream_sid: 'MZx', media_format: { encoding: 'audio/x-raw', sample_rate: '8000', bit_rate: '16' } },
      }),
    )
    const pcm = new Int16Array([0, 1000, -1000, 32000, -32000, 5, -5, 12345])
    transport.receive(
      JSON.stringify({
        event: 'media',
        stream_sid: 'MZx',
        media: { chunk: '1', timestamp: '100', payload: b64(new Uint8Array(pcm.buffer)) },
      }),
    )
    expect(heard[0].ulaw).toEqual(pcm16ToUlaw(pcm))

    transport.send(ulawTone(250)) // 500 bytes of PCM: one whole frame goes, the rest waits for more or for a mark
    expect(json().map((message) => Buffer.from(message.media.payload, 'base64').length)).toEqual([320])
    const mark = transport.mark()
    const media = json().filter((message) => message.event === 'media')
    const bytes = media.map((message) => Buffer.from(message.media.payload, 'base64'))
    expect(bytes.map((chunk) => chunk.length)).toEqual([320, 320])
    expect(new Int16Array(new Uint8Array(Buffer.concat(bytes)).buffer).slice(0, 250)).toEqual(
      ulawToPcm16(ulawTone(250)) as Int16Array<ArrayBuffer>,
    )
    expect(json().at(-1)).toEqual({ event: 'mark', stream_sid: 'MZx', mark: { name: 'ringbase-1' } })
    transport.receive(JSON.stringify({ event: 'mark', stream_sid: 'MZx', mark: { name: 'ringbase-1' } }))
    expect(await mark).toBe('played')
    transport.flush()
    expect(json().at(-1)).toEqual({ event: 'clear', stream_sid: 'MZx' })
  })
})

describe('telnyx framing', () => {
  test('only the inbound track is heard; agent media, marks and clear carry no stream id', async () => {
    const { transport, json, heard } = harness('telnyx')
    transport.send(ulawTone(160))
    expect(json()).toEqual([{ event: 'media', media: { payload: b64(ulawTone(160)) } }])
    transport.receive(
      JSON.stringify({
        event: 'start',
        stream_id: 'st-1',
        start: { call_control_id: 'v3:1', media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 } },
      }),
    )
    transport.receive(
      JSON.stringify({ event: 'media', stream_id: 'st-1', media: { track: 'outbound', payload: b64(ulawTone(10)) } }),
    )
    transport.receive(
      JSON.stringify({
        event: 'media',
        stream_id: 'st-1',
        media: { track: 'inbound', chunk: '2', timestamp: '40', payload: b64(ulawTone(20)) },
      }),
    )
    expect(heard.map((frame) => frame.ulaw)).toEqual([ulawTone(20)])
    const mark = transport.mark()
    transport.flush()
    expect(json().slice(1)).toEqual([{ event: 'mark', mark: { name: 'ringbase-1' } }, { event: 'clear' }])
    expect(await mark).toBe('flushed')
  })
})

describe('plivo framing (Plivo, Vobiz)', () => {
  test('playAudio, checkpoint answered by playedStream, clearAudio', async () => {
    const { transport, json, heard } = harness('plivo')
    transport.receive(
      JSON.stringify({
        event: 'start',
        start: { callId: 'c1', streamId: 'st-9', mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } },
      }),
    )
    transport.receive(
      JSON.stringify({ event: 'media', streamId: 'st-9', media: { track: 'inbound', payload: b64(ulawTone(8)) } }),
    )
    expect(heard[0].ulaw).toEqual(ulawTone(8))
    transport.send(ulawTone(4))
    const mark = transport.mark()
    expect(json()).toEqual([
      { event: 'playAudio', media: { contentType: 'audio/x-mulaw', sampleRate: 8000, payload: b64(ulawTone(4)) } },
      { event: 'checkpoint', streamId: 'st-9', name: 'ringbase-1' },
    ])
    transport.receive(JSON.stringify({ event: 'playedStream', streamId: 'st-9', name: 'ringbase-1' }))
    expect(await mark).toBe('played')
    transport.flush()
    expect(json().at(-1)).toEqual({ event: 'clearAudio', streamId: 'st-9' })
  })
})

describe('vonage framing', () => {
  test('binary L16 16 kHz in 640-byte frames both ways; notify is the mark, clear the flush', async () => {
    const { transport, sent, heard, json } = harness('vonage')
    transport.receive(JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000' }))
    // 20 ms of caller audio at 16 kHz → 160 µ-law samples at 8 kHz (give or take the resampler's edge)
    transport.receive(new Uint8Array(new Int16Array(320).fill(1000).buffer))
    expect(Math.abs(heard[0].ulaw.length - 160)).toBeLessThanOrEqual(1)

    transport.send(new Uint8Array(400).fill(0xff)) // 50 ms of µ-law silence → 1600 bytes at 16 kHz: 2 whole frames
    const binaries = () => sent.filter((message): message is Uint8Array => typeof message !== 'string')
    expect(binaries().map((frame) => frame.byteLength)).toEqual([640, 640])
    const mark = transport.mark()
    expect(binaries().map((frame) => frame.byteLength)).toEqual([640, 640, 640])
    expect(json().at(-1)).toEqual({ action: 'notify', payload: { name: 'ringbase-1' } })
    transport.receive(JSON.stringify({ event: 'websocket:notify', payload: { name: 'ringbase-1' } }))
    expect(await mark).toBe('played')
    transport.flush()
    expect(json().at(-1)).toEqual({ action: 'clear' })
  })
})
