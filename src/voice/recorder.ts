/**
 * Records a call from the audio Ringbase itself receives and sends, aligned by wall-clock offsets from the start of
 * the call: the caller track places each received frame at its time (the pipeline's sample clock); the agent track places sent audio
 * where it is actually played (after everything sent before it, as the PBX queues it) and cuts it at a flush.
 *
 * Memory: both tracks are kept as 8 kHz PCM16 in growable arrays (≈ 1 MB per track per minute). With a `spillPath`,
 * a call's audio older than KEEP_SAMPLES is appended to that file (stereo PCM) every 5–10 s, so a call holds its first
 * minute's arrays (≈ 2 MB) however long it lasts. The WAVs are streamed from the file and the tracks when stored, never
 * built whole. Audio past `maxDurationMs` is dropped.
 */
import { appendFile, open, rm } from 'node:fs/promises'
import { channelOf, interleavedPieces, pcmBytes, wavStream } from '../lib/wav.ts'

const SAMPLE_RATE = 8000
const SAMPLES_PER_MS = SAMPLE_RATE / 1000
/** A frame arriving this close to where the previous one ended continues it (arrival jitter), rather than leaving a gap. */
const CONTIGUOUS_TOLERANCE_MS = 40
/**
 * The agent track's memory is written (silence) this far ahead of the caller's audio, a page at a time as the call
 * goes on: the first write into fresh memory faults its pages in, and the agent's replies did that at the busiest
 * instant (100 callers answered at once: 3–5 ms for their first 300 ms alone, against 0.04 ms in memory already
 * touched). It covers the start lead and the read-ahead of a reply (agent-voice.ts).
 */
const AGENT_PREPARED_AHEAD_SAMPLES = 3 * SAMPLE_RATE
/**
 * Audio this far behind the caller's latest frame can no longer change (a flush cuts only what is still to be played,
 * and frames held up by a stalled event loop arrive within seconds), so it may leave memory.
 */
const KEEP_SAMPLES = 15 * SAMPLE_RATE
/**
 * Settled audio is appended once this much of it has gathered, plus up to as much again, drawn per call: pieces this
 * small cost a fraction of a millisecond to lay out (a minute's cost 2–13 ms), and calls answered at the same instant
 * (a campaign's) do not all append at the same moment.
 */
const SPILL_AFTER_SAMPLES = 5 * SAMPLE_RATE

/** The call's WAVs, each streamed when asked for (each call gives a new stream); `discard` removes what was spilled. */
export type CallRecording = {
  /** Left: caller, right: agent. */
  stereo(): ReadableStream<Uint8Array>
  caller(): ReadableStream<Uint8Array>
  agent(): ReadableStream<Uint8Array>
  durationMs: number
  discard(): Promise<void>
}

export type CallRecorder = {
  /** Caller audio (8 kHz PCM) that arrived at `atMs` (it ended then). */
  caller(pcm8k: Int16Array, atMs: number): void
  /** Agent audio (8 kHz PCM) handed to the transport at `atMs`: played after what is still queued. */
  agent(pcm8k: Int16Array, atMs: number): void
  /** The agent's queued audio was dropped at `atMs` (barge-in): what was not yet played is removed. */
  agentFlushed(atMs: number): void
  /** The WAVs, up to `endMs` (default: the end of the last audio). */
  finish(endMs?: number): CallRecording
}

export type CallRecorderOptions = {
  maxDurationMs?: number
  /** A file of this call's own (its folder exists) where settled audio goes; absent: everything stays in memory. */
  spillPath?: string
  /** The spill file could not be written: the rest of the call stays in memory. */
  onSpillError?: (error: unknown) => void
}

/**
 * Sample `base + i` of the call is `samples[i]` (samples before `base` were spilled). Past `end` a track holds
 * silence (a flush zeroes the audio it cuts), so audio after a gap is written alone. `touched`: memory written up to
 * there (past it, pages may not be faulted in yet). `end` and `touched` count from the start of the call.
 */
type Track = { samples: Int16Array; end: number; touched: number }

/** Settled audio (stereo frames) that left memory: `fileFrames` in the file, then `held` (after the file failed). */
type Spill = { fileFrames: number; held: Int16Array[]; failed: boolean; writes: Promise<void> }

export function createCallRecorder(startedAtMs: number, options: CallRecorderOptions = {}): CallRecorder {
  const maxSamples = Math.round((options.maxDurationMs ?? 3_600_000) * SAMPLES_PER_MS)
  const callerTrack: Track = { samples: new Int16Array(SAMPLE_RATE * 60), end: 0, touched: 0 }
  const agentTrack: Track = { samples: new Int16Array(SAMPLE_RATE * 60), end: 0, touched: 0 }
  let base = 0
  const spillAfterSamples = SPILL_AFTER_SAMPLES + Math.floor(Math.random() * SPILL_AFTER_SAMPLES)
  const spill: Spill = { fileFrames: 0, held: [], failed: false, writes: Promise.resolve() }

  function offsetOf(atMs: number): number {
    return Math.max(0, Math.round((atMs - startedAtMs) * SAMPLES_PER_MS))
  }

  function ensureCapacity(track: Track, neededEnd: number): void {
    const needed = neededEnd - base
    if (needed <= track.samples.length) return
    const grown = new Int16Array(Math.max(needed, track.samples.length * 2))
    grown.set(track.samples.subarray(0, Math.max(0, track.end - base)))
    track.samples = grown
    track.touched = Math.max(base, track.end)
  }

  function write(track: Track, pcm: Int16Array, at: number): void {
    const skipped = Math.max(0, base - at)
    const from = at + skipped
    const length = Math.min(pcm.length - skipped, maxSamples - from)
    if (length <= 0) return
    ensureCapacity(track, from + length)
    track.samples.set(pcm.subarray(skipped, skipped + length), from - base)
    track.end = Math.max(track.end, from + length)
    track.touched = Math.max(track.touched, track.end)
  }

  function prepareAgentTrack(upTo: number): void {
    const end = Math.min(upTo, maxSamples)
    if (end <= agentTrack.touched) return
    ensureCapacity(agentTrack, end)
    agentTrack.samples.fill(0, agentTrack.touched - base, end - base)
    agentTrack.touched = end
  }

  /** Moves the settled audio before `settledUpTo` out of memory once there is enough of it. */
  function spillSettled(settledUpTo: number): void {
    if (!options.spillPath || settledUpTo - base < spillAfterSamples) return
    const frames = settledUpTo - base
    const [piece] = interleavedPieces([callerTrack.samples, agentTrack.samples], 0, frames, frames)
    for (const track of [callerTrack, agentTrack]) shiftOut(track, frames)
    base = settledUpTo
    queueSpill(piece)
  }

  /** Drops the track's first `frames` samples from memory; the pages already touched stay in use, zeroed. */
  function shiftOut(track: Track, frames: number): void {
    const touchedIndex = track.touched - base
    track.samples.copyWithin(0, frames, touchedIndex)
    track.samples.fill(0, Math.max(0, touchedIndex - frames), touchedIndex)
    track.touched += frames
  }

  function queueSpill(piece: Int16Array): void {
    const path = options.spillPath!
    spill.writes = spill.writes.then(async () => {
      if (!spill.failed) {
        try {
          await appendFile(path, pcmBytes(piece), { mode: 0o600 })
          spill.fileFrames += piece.length / 2
          return
        } catch (error) {
          spill.failed = true
          options.onSpillError?.(error)
        }
      }
      spill.held.push(piece)
    })
  }

  /** The whole call as stereo pieces: what was spilled, then what is in memory, up to `length`. */
  async function* stereoPieces(length: number): AsyncGenerator<Int16Array> {
    await spill.writes
    if (options.spillPath && spill.fileFrames > 0) yield* readSpilled(options.spillPath, spill.fileFrames)
    yield* spill.held
    yield* interleavedPieces([callerTrack.samples, agentTrack.samples], 0, length - base, SAMPLE_RATE)
  }

  return {
    caller(pcm8k, atMs) {
      let at = offsetOf(atMs) - pcm8k.length
      if (Math.abs(at - callerTrack.end) <= CONTIGUOUS_TOLERANCE_MS * SAMPLES_PER_MS) at = callerTrack.end
      write(callerTrack, pcm8k, Math.max(0, at))
      prepareAgentTrack(callerTrack.end + AGENT_PREPARED_AHEAD_SAMPLES)
      spillSettled(Math.min(offsetOf(atMs) - KEEP_SAMPLES, maxSamples))
    },
    agent(pcm8k, atMs) {
      write(agentTrack, pcm8k, Math.max(offsetOf(atMs), agentTrack.end))
    },
    agentFlushed(atMs) {
      const at = Math.max(offsetOf(atMs), base)
      if (at >= agentTrack.end) return
      agentTrack.samples.fill(0, at - base, agentTrack.end - base)
      agentTrack.end = at
    },
    finish(endMs) {
      const requested =
        endMs === undefined ? Math.max(callerTrack.end, agentTrack.end) : Math.min(offsetOf(endMs), maxSamples)
      const length = Math.max(requested, base)
      const mono = (channel: number) => mapPieces(stereoPieces(length), (piece) => channelOf(piece, channel, 2))
      return {
        stereo: () => wavStream(stereoPieces(length), length, SAMPLE_RATE, 2),
        caller: () => wavStream(mono(0), length, SAMPLE_RATE, 1),
        agent: () => wavStream(mono(1), length, SAMPLE_RATE, 1),
        durationMs: length / SAMPLES_PER_MS,
        async discard() {
          await spill.writes
          if (options.spillPath) await rm(options.spillPath, { force: true })
        },
      }
    },
  }
}

async function* mapPieces(
  pieces: AsyncIterable<Int16Array>,
  change: (piece: Int16Array) => Int16Array,
): AsyncGenerator<Int16Array> {
  for await (const piece of pieces) yield change(piece)
}

/** The spill file's first `frames` stereo frames (what was confirmed written), a second at a time. */
async function* readSpilled(path: string, frames: number): AsyncGenerator<Int16Array> {
  const file = await open(path, 'r')
  try {
    for (let at = 0; at < frames; at += SAMPLE_RATE) {
      const piece = new Int16Array(Math.min(SAMPLE_RATE, frames - at) * 2)
      const bytes = pcmBytes(piece)
      const { bytesRead } = await file.read(bytes, 0, bytes.length, at * 4)
      if (bytesRead < bytes.length) throw new Error(`call recording spill ${path} is shorter than written`)
      yield piece
    }
  } finally {
    await file.close()
  }
}
