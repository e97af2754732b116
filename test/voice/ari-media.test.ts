import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  ariMediaUrl,
  connectAriMedia,
  MediaConnectError,
  parseMediaControl,
  type AriMediaTransport,
} from '../../src/voice/ari-media.ts'
import { pcm16ToUlaw } from '../../src/voice/g711.ts'
import type { MediaClose } from '../../src/voice/media-transport.ts'
import { startFakeAriMedia, type FakeAriMedia, type FakeMediaChannel } from '../support/fake-ari-media.ts'
import { sine } from '../support/audio.ts'
import { waitFor } from '../support/wait.ts'

const ulawTone = (ms: number, frequency = 440) => pcm16ToUlaw(sine(frequency, 8000, ms))
const concat = (frames: { ulaw: Uint8Array }[]): Uint8Array => {
  const out = new Uint8Array(frames.length * 160)
  frames.forEach((frame, index) => out.set(frame.ulaw, index * 160))
  return out
}

describe('ARI media transport against a fake chan_websocket', () => {
  let fake: FakeAriMedia
  beforeAll(() => {
    fake = startFakeAriMedia()
  })
  afterAll(() => fake.stop())

  async function open(options: Parameters<FakeAriMedia['addChannel']>[0] & { maxQueuedMs?: number } = {}) {
    const channel = fake.addChannel(options)
    const transport = await connectAriMedia({
      endpoint: `${fake.url}/ari`,
      connectionId: channel.connectionId,
      maxQueuedMs: options.maxQueuedMs,
    })
    const closes: MediaClose[] = []
    transport.onClose((close) => closes.push(close))
    return { channel, transport, closes }
  }

  async function finish(transport: AriMediaTransport, channel: FakeMediaChannel) {
    transport.close()
    await channel.closed
  }

  test('MEDIA_START (JSON form) is read before connect resolves', async () => {
    const { channel, transport } = await open({ channelId: 'media-call-1' })
    expect(transport.start).toEqual({
      connectionId: channel.connectionId,
      channel: expect.stringMatching(/^WebSocket\/INCOMING\//),
      channelId: 'media-call-1',
      format: 'ulaw',
      optimalFrameSize: 160,
      ptimeMs: 20,
      controlFormat: 'json',
    })
    await finish(transport, channel)
  })

  test('caller frames arrive only while the caller speaks, 160 bytes each, with increasing arrival times', async () => {
    const { channel, transport } = await open()
    const frames: { bytes: number; atMs: number }[] = []
    transport.onAudio((ulaw, atMs) => frames.push({ bytes: ulaw.length, atMs }))
    await Bun.sleep(100)
    expect(frames).toHaveLength(0)
    channel.speak(sine(300, 8000, 200))
    await waitFor('10 caller frames', () => frames.length >= 10)
    await Bun.sleep(100)
    expect(frames).toHaveLength(10)
    expect(frames.every((frame) => frame.bytes === 160)).toBe(true)
    for (let i = 1; i < frames.length; i++) expect(frames[i].atMs).toBeGreaterThan(frames[i - 1].atMs)
    await finish(transport, channel)
  })

  test('agent audio is played as sent; a mark resolves once all of it has been played', async () => {
    const { channel, transport } = await open()
    const tone = ulawTone(500)
    transport.send(tone)
    const outcome = await transport.mark()
    expect(outcome).toBe('played')
    expect(channel.played).toHaveLength(25)
    expect(concat(channel.played)).toEqual(tone)
    const processed = channel.sent.find((message) => message.text.includes('MEDIA_MARK_PROCESSED'))!
    expect(processed.atMs).toBeGreaterThanOrEqual(channel.played[24].atMs)
    expect(await transport.mark()).toBe('played') // nothing queued: at once
    await finish(transport, channel)
  }, 10_000)

  test('plain-text control: MEDIA_START read, MARK_MEDIA sent as text, its plain answer resolves the mark', async () => {
    const { channel, transport } = await open({ controlFormat: 'plain' })
    expect(transport.start.controlFormat).toBe('plain')
    expect(transport.start.channelId).toBe(channel.channelId)
    transport.send(ulawTone(100))
    expect(await transport.mark()).toBe('played')
    expect(channel.received.map((message) => message.text)).toEqual(['MARK_MEDIA m1'])
    expect(channel.played).toHaveLength(5)
    await finish(transport, channel)
  })

  test('flush (barge-in) drops the queue at once: nothing of the old reply plays after it, pending marks say flushed', async () => {
    const { channel, transport } = await open({ maxQueuedMs: 1000 })
    transport.send(ulawTone(5000))
    const firstSentence = transport.mark()
    transport.send(ulawTone(1000, 880))
    const secondSentence = transport.mark()
    await waitFor('10 frames played', () => channel.played.length >= 10)
    transport.flush()
    expect(await firstSentence).toBe('flushed')
    expect(await secondSentence).toBe('flushed')
    await waitFor('the flush at the fake', () => channel.flushes.length === 1)
    const playedAtFlush = channel.played.length
    await Bun.sleep(300)
    expect(channel.played.filter((frame) => frame.atMs > channel.flushes[0])).toHaveLength(0)
    expect(channel.played.length).toBe(playedAtFlush)
    expect(channel.receivedAudioBytes).toBeLessThanOrEqual(8 * 1000 + 8 * 200) // the local backlog was never sent
    // the next reply plays normally
    transport.send(ulawTone(100))
    expect(await transport.mark()).toBe('played')
    expect(channel.played.length).toBe(playedAtFlush + 5)
    await finish(transport, channel)
  }, 10_000)

  test('at most maxQueuedMs is queued at Asterisk; the rest follows in order as it plays', async () => {
    const { channel, transport } = await open({ maxQueuedMs: 1000 })
    const speech = ulawTone(2500)
    transport.send(speech)
    expect(await transport.mark()).toBe('played')
    // 1 s (50 frames) by the transport's estimate of the playout; the far end's clock may lag it by a frame or two
    expect(channel.peakQueuedFrames).toBeLessThanOrEqual(53)
    expect(concat(channel.played)).toEqual(speech)
    await finish(transport, channel)
  }, 10_000)

  test('MEDIA_XOFF stops sending until MEDIA_XON; nothing is dropped', async () => {
    const { channel, transport } = await open({ maxQueuedMs: 60_000, xoffFrames: 50, xonFrames: 40 })
    const first = ulawTone(1200) // 60 frames: past the XOFF level at once
    transport.send(first)
    await waitFor('MEDIA_XOFF', () => transport.flowPaused)
    const held = ulawTone(400, 880)
    transport.send(held)
    const done = transport.mark()
    await Bun.sleep(60)
    expect(channel.receivedAudioBytes).toBe(first.length)
    expect(await done).toBe('played')
    expect(channel.sent.some((message) => message.text.includes('MEDIA_XON'))).toBe(true)
    expect(transport.flowPaused).toBe(false)
    expect(channel.droppedBytes).toBe(0)
    expect(concat(channel.played)).toEqual(Uint8Array.from([...first, ...held]))
    await finish(transport, channel)
  }, 10_000)

  test('a flush during XOFF empties the queue and sending resumes', async () => {
    const { channel, transport } = await open({ maxQueuedMs: 60_000, xoffFrames: 50, xonFrames: 40 })
    transport.send(ulawTone(1200))
    await waitFor('MEDIA_XOFF', () => transport.flowPaused)
    transport.flush()
    expect(transport.flowPaused).toBe(false)
    const next = ulawTone(100, 880)
    transport.send(next)
    expect(await transport.mark()).toBe('played')
    expect(channel.droppedBytes).toBe(0)
    expect(concat(channel.played.slice(-5))).toEqual(next)
    await finish(transport, channel)
  })

  test('a dropped socket is reported as a remote close with its code; pending marks resolve as closed', async () => {
    const { channel, transport, closes } = await open()
    transport.send(ulawTone(2000))
    const mark = transport.mark()
    await waitFor('audio playing', () => channel.played.length > 0)
    channel.drop()
    expect(await mark).toBe('closed')
    await waitFor('close reported', () => closes.length === 1)
    expect(closes[0].initiatedBy).toBe('remote')
    expect(closes[0].code).toBe(1006)
    expect(transport.closed).toBe(true)
    expect(await transport.mark()).toBe('closed')
    transport.send(ulawTone(100)) // ignored, no throw
  })

  test('the far end hanging up (close 1000) and the app closing are told apart', async () => {
    const hungUp = await open()
    hungUp.channel.hangup()
    await waitFor('close reported', () => hungUp.closes.length === 1)
    expect(hungUp.closes[0]).toMatchObject({ code: 1000, initiatedBy: 'remote' })

    const closedByApp = await open()
    closedByApp.transport.close()
    await waitFor('close reported', () => closedByApp.closes.length === 1)
    expect(closedByApp.closes[0]).toMatchObject({ code: 1000, initiatedBy: 'app' })
    expect((await closedByApp.channel.closed).code).toBe(1000)
  })

  test('an ERROR event from Asterisk is logged with its text', async () => {
    const channel = fake.addChannel()
    const warnings: { context: object; message: string }[] = []
    const transport = await connectAriMedia({
      endpoint: fake.url,
      connectionId: channel.connectionId,
      logger: { warn: (context, message) => warnings.push({ context, message }) },
    })
    channel.sendText(
      JSON.stringify({ event: 'ERROR', channel_id: channel.channelId, error_text: 'Unable to parse JSON command' }),
    )
    await waitFor('the warning', () => warnings.length === 1)
    expect(warnings[0].context).toMatchObject({ error: 'Unable to parse JSON command' })
    await finish(transport, channel)
  })

  test('an unknown connection id is refused with a MediaConnectError', async () => {
    await expect(connectAriMedia({ endpoint: fake.url, connectionId: 'no-such-id' })).rejects.toBeInstanceOf(
      MediaConnectError,
    )
  })
})

describe('the fake media endpoint itself', () => {
  test('answers a non-JSON text frame with ERROR, GET_STATUS with STATUS, like Asterisk', async () => {
    const fake = startFakeAriMedia()
    const channel = fake.addChannel()
    const socket = new WebSocket(`${fake.url.replace('http', 'ws')}/media/${channel.connectionId}`, 'media')
    const messages: string[] = []
    socket.onmessage = (message) => messages.push(String(message.data))
    await waitFor('MEDIA_START', () => messages.length === 1)
    expect(socket.protocol).toBe('media')
    socket.send('hello')
    socket.send(JSON.stringify({ command: 'GET_STATUS' }))
    await waitFor('two answers', () => messages.length === 3)
    expect(JSON.parse(messages[1])).toEqual({
      event: 'ERROR',
      channel_id: channel.channelId,
      error_text: 'Unable to parse JSON command',
    })
    expect(JSON.parse(messages[2])).toMatchObject({ event: 'STATUS', queue_length: 0, xon_level: 800, xoff_level: 900 })
    socket.close()
    await channel.closed
    await fake.stop()
  })
})

describe('media control parsing and URLs', () => {
  test('plain-text events: key:value fields and positional words', () => {
    expect(parseMediaControl('MEDIA_MARK_PROCESSED m1')).toEqual({
      event: 'MEDIA_MARK_PROCESSED',
      fields: {},
      words: ['m1'],
    })
    expect(parseMediaControl('STATUS channel_id:media-x queue_length:25 queue_full:false')).toEqual({
      event: 'STATUS',
      fields: { channel_id: 'media-x', queue_length: '25', queue_full: 'false' },
      words: [],
    })
    expect(parseMediaControl('{"event":"MEDIA_XOFF","channel_id":"m"}')?.event).toBe('MEDIA_XOFF')
    expect(parseMediaControl('{not json')).toBeNull()
    expect(parseMediaControl('   ')).toBeNull()
  })

  test('the media URL keeps host, port and prefix, drops credentials and /ari, and picks ws or wss', () => {
    expect(ariMediaUrl('http://127.0.0.1:8088', 'abc')).toBe('ws://127.0.0.1:8088/media/abc')
    expect(ariMediaUrl('https://user:secret@pbx.example/asterisk/ari/', 'a b')).toBe(
      'wss://pbx.example/asterisk/media/a%20b',
    )
    expect(ariMediaUrl('ws://pbx:8088/ari', 'x')).toBe('ws://pbx:8088/media/x')
  })
})
