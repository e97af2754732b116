import { describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createCallRecorder, type CallRecorder, type CallRecording } from '../../src/voice/recorder.ts'
import { decodeWav } from '../../src/lib/wav.ts'
import { rms, sine } from '../support/audio.ts'

const frame = (value: number) => new Int16Array(160).fill(value)
/** Samples [fromMs, toMs) of an 8 kHz track. */
const span = (track: Int16Array, fromMs: number, toMs: number) => track.subarray(fromMs * 8, toMs * 8)

const wav = async (stream: ReadableStream<Uint8Array>) => decodeWav(await new Response(stream).bytes())

async function tracks(recording: CallRecording) {
  const { pcm: samples, format } = await wav(recording.stereo())
  expect(format.channels).toBe(2)
  expect(format.sampleRate).toBe(8000)
  const caller = new Int16Array(samples.length / 2)
  const agent = new Int16Array(samples.length / 2)
  for (let i = 0; i < caller.length; i++) (caller[i] = samples[2 * i]), (agent[i] = samples[2 * i + 1])
  return { caller, agent }
}

describe('call recorder', () => {
  test('caller frames land at their arrival time; jittered frames stay contiguous; a silent stretch stays silent', async () => {
    const recorder = createCallRecorder(10_000)
    recorder.caller(frame(100), 10_120) // covers 100–120 ms
    recorder.caller(frame(200), 10_143) // 3 ms late: still right after the previous frame
    recorder.caller(frame(300), 10_520) // after 360 ms without frames
    const { caller } = await tracks(recorder.finish())
    expect(caller.length).toBe(520 * 8)
    expect(rms(span(caller, 0, 100))).toBe(0)
    expect([...new Set(span(caller, 100, 120))]).toEqual([100])
    expect([...new Set(span(caller, 120, 140))]).toEqual([200])
    expect(rms(span(caller, 140, 500))).toBe(0)
    expect([...new Set(span(caller, 500, 520))]).toEqual([300])
  })

  test('agent audio plays after what is still queued, and a flush cuts what was not played', async () => {
    const recorder = createCallRecorder(0)
    recorder.agent(new Int16Array(8 * 1000).fill(1000), 100) // plays 100–1100 ms
    recorder.agent(new Int16Array(8 * 1000).fill(2000), 300) // queued behind it: 1100–2100 ms
    recorder.agentFlushed(1500) // barge-in
    recorder.agent(new Int16Array(8 * 200).fill(3000), 1800) // next reply after the flush: 1800–2000 ms
    const { agent } = await tracks(recorder.finish(2500))
    expect(rms(span(agent, 0, 100))).toBe(0)
    expect([...new Set(span(agent, 100, 1100))]).toEqual([1000])
    expect([...new Set(span(agent, 1100, 1500))]).toEqual([2000])
    expect(rms(span(agent, 1500, 1800))).toBe(0)
    expect([...new Set(span(agent, 1800, 2000))]).toEqual([3000])
    expect(rms(span(agent, 2000, 2500))).toBe(0)
  })

  test('stereo is left caller, right agent, aligned; the mono tracks equal the stereo channels', async () => {
    const recorder = createCallRecorder(0)
    const greeting = sine(440, 8000, 1000)
    recorder.agent(greeting, 0)
    for (let atMs = 1220; atMs <= 2200; atMs += 20) recorder.caller(sine(300, 8000, 20), atMs)
    const recording = recorder.finish()
    expect(recording.durationMs).toBe(2200)
    const { caller, agent } = await tracks(recording)
    expect(span(agent, 0, 1000)).toEqual(greeting)
    expect(rms(span(agent, 1000, 2200))).toBe(0)
    expect(rms(span(caller, 0, 1200))).toBe(0)
    expect(rms(span(caller, 1200, 2200))).toBeGreaterThan(5000)
    expect((await wav(recording.caller())).pcm).toEqual(caller)
    expect((await wav(recording.agent())).pcm).toEqual(agent)
  })

  test("a call that ends past a track's first minute, its audio before: silence up to the end, in both tracks", async () => {
    const recorder = createCallRecorder(0)
    recorder.caller(frame(100), 1_020)
    recorder.agent(frame(200), 2_000)
    const recording = recorder.finish(70_000)
    expect(recording.durationMs).toBe(70_000)
    const { caller, agent } = await tracks(recording)
    expect(caller.length).toBe(70_000 * 8)
    expect([...new Set(span(caller, 1_000, 1_020))]).toEqual([100])
    expect([...new Set(span(agent, 2_000, 2_020))]).toEqual([200])
    expect(rms(span(caller, 1_020, 70_000))).toBe(0)
    expect(rms(span(agent, 2_020, 70_000))).toBe(0)
  })

  test('past the first minute the tracks grow, the agent audio where it was played, silence around it', async () => {
    const recorder = createCallRecorder(0)
    for (let atMs = 20; atMs <= 62_000; atMs += 20) recorder.caller(frame(100), atMs)
    recorder.agent(frame(200), 61_000)
    const { caller, agent } = await tracks(recorder.finish())
    expect(caller.length).toBe(62_000 * 8)
    expect([...new Set(caller)]).toEqual([100])
    expect([...new Set(span(agent, 61_000, 61_020))]).toEqual([200])
    expect(rms(span(agent, 0, 61_000))).toBe(0)
    expect(rms(span(agent, 61_020, 62_000))).toBe(0)
  })

  test('audio past maxDurationMs is dropped', async () => {
    const recorder = createCallRecorder(0, { maxDurationMs: 1000 })
    recorder.agent(new Int16Array(8 * 3000).fill(7), 0)
    expect(recorder.finish().durationMs).toBe(1000)
  })

  describe('a long call with a spill file', () => {
    const bytesOf = (stream: ReadableStream<Uint8Array>) => new Response(stream).bytes()
    /** Ten minutes of caller frames (each its own value), a reply every 7 s, a barge-in every third one. */
    function playLongCall(recorder: CallRecorder): void {
      for (let frame = 1; frame <= 30_000; frame++) {
        const atMs = frame * 20
        recorder.caller(new Int16Array(160).fill((frame % 2000) + 1), atMs)
        if (frame % 350 === 0) recorder.agent(new Int16Array(8 * 3000).fill(-((frame % 1000) + 1)), atMs)
        if (frame % 1050 === 60) recorder.agentFlushed(atMs)
      }
    }

    test('settled audio leaves memory for the file, and the WAVs are the same as a recording kept in memory', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'ringbase-recorder-'))
      try {
        const spillPath = join(folder, '7.pcm')
        const spilling = createCallRecorder(0, { spillPath, onSpillError: (error) => expect(error).toBeNull() })
        const inMemory = createCallRecorder(0)
        playLongCall(spilling)
        playLongCall(inMemory)
        const spilled = spilling.finish(600_500)
        const kept = inMemory.finish(600_500)
        expect(spilled.durationMs).toBe(600_500)
        for (const wav of ['stereo', 'caller', 'agent'] as const)
          expect(Buffer.compare(await bytesOf(spilled[wav]()), await bytesOf(kept[wav]()))).toBe(0)
        // all but the last 15 s (kept) and at most 10 s more (not gathered yet) went to the file
        const fileFrames = statSync(spillPath).size / 4
        expect(fileFrames).toBeGreaterThanOrEqual((600_000 - 25_000) * 8)
        expect(fileFrames).toBeLessThanOrEqual((600_000 - 15_000) * 8)
        const { caller } = await tracks(spilled)
        expect([...new Set(span(caller, 0, 20))]).toEqual([2])
        expect([...new Set(span(caller, 599_980, 600_000))]).toEqual([1])
        await spilled.discard()
        expect(existsSync(spillPath)).toBe(false)
      } finally {
        rmSync(folder, { recursive: true, force: true })
      }
    })

    test('a spill file that cannot be written: told once, the audio stays in memory, the WAVs are whole', async () => {
      const errors: unknown[] = []
      const recorder = createCallRecorder(0, {
        spillPath: join(tmpdir(), 'ringbase-no-such-folder', 'x', '8.pcm'),
        onSpillError: (error) => errors.push(error),
      })
      const inMemory = createCallRecorder(0)
      playLongCall(recorder)
      playLongCall(inMemory)
      const [failing, kept] = [recorder.finish(), inMemory.finish()]
      expect(Buffer.compare(await bytesOf(failing.stereo()), await bytesOf(kept.stereo()))).toBe(0)
      expect(errors).toHaveLength(1)
      await failing.discard()
    })
  })
})
