/**
 * Records a call from the audio Ringbase itself receives and sends, aligned by wall-clock offsets from the start of
 * the call: the caller track places each received frame at its time (the pipeline's sample clock); the agent track places sent audio
 * where it is actually played (after everything sent before it, as the PBX queues it) and cuts it at a flush.
 *
 * Memory: both tracks are kept as 8 kHz PCM16 in growable arrays (≈ 1 MB per track per minute; a 10-minute call
 * holds ≈ 19 MB). The WAVs are streamed from them a second at a time when stored, never built whole. Audio past
 * `maxDurationMs` is dropped.
 */
import { wavStream } from '../lib/wav.ts'

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

/** The call's WAVs, each streamed from the tracks when asked for (each call gives a new stream). */
export type CallRecording = {
  /** Left: caller, right: agent. */
  stereo(): ReadableStream<Uint8Array>
  caller(): ReadableStream<Uint8Array>
  agent(): ReadableStream<Uint8Array>
  durationMs: number
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

/**
 * Past `end` a track holds silence (a flush zeroes the audio it cuts), so audio after a gap is written alone.
 * `touched`: memory written up to there (past it, pages may not be faulted in yet).
 */
type Track = { samples: Int16Array; end: number; touched: number }

function ensureCapacity(track: Track, needed: number): void {
  if (needed <= track.samples.length) return
  const grown = new Int16Array(Math.max(needed, track.samples.length * 2))
  grown.set(track.samples.subarray(0, track.end))
  track.samples = grown
  track.touched = track.end
}

export function createCallRecorder(startedAtMs: number, options: { maxDurationMs?: number } = {}): CallRecorder {
  const maxSamples = Math.round((options.maxDurationMs ?? 3_600_000) * SAMPLES_PER_MS)
  const callerTrack: Track = { samples: new Int16Array(SAMPLE_RATE * 60), end: 0, touched: 0 }
  const agentTrack: Track = { samples: new Int16Array(SAMPLE_RATE * 60), end: 0, touched: 0 }

  function offsetOf(atMs: number): number {
    return Math.max(0, Math.round((atMs - startedAtMs) * SAMPLES_PER_MS))
  }

  function write(track: Track, pcm: Int16Array, at: number): void {
    const length = Math.min(pcm.length, maxSamples - at)
    if (length <= 0) return
    ensureCapacity(track, at + length)
    track.samples.set(pcm.subarray(0, length), at)
    track.end = Math.max(track.end, at + length)
    track.touched = Math.max(track.touched, track.end)
  }

  function prepareAgentTrack(upTo: number): void {
    const end = Math.min(upTo, maxSamples)
    if (end <= agentTrack.touched) return
    ensureCapacity(agentTrack, end)
    agentTrack.samples.fill(0, agentTrack.touched, end)
    agentTrack.touched = end
  }

  return {
    caller(pcm8k, atMs) {
      let at = offsetOf(atMs) - pcm8k.length
      if (Math.abs(at - callerTrack.end) <= CONTIGUOUS_TOLERANCE_MS * SAMPLES_PER_MS) at = callerTrack.end
      write(callerTrack, pcm8k, Math.max(0, at))
      prepareAgentTrack(callerTrack.end + AGENT_PREPARED_AHEAD_SAMPLES)
    },
    agent(pcm8k, atMs) {
      write(agentTrack, pcm8k, Math.max(offsetOf(atMs), agentTrack.end))
    },
    agentFlushed(atMs) {
      const at = offsetOf(atMs)
      if (at >= agentTrack.end) return
      agentTrack.samples.fill(0, at, agentTrack.end)
      agentTrack.end = at
    },
    finish(endMs) {
      const length =
        endMs === undefined ? Math.max(callerTrack.end, agentTrack.end) : Math.min(offsetOf(endMs), maxSamples)
      // Past a track's `end` its memory holds silence, and past its memory the stream writes silence.
      const caller = callerTrack.samples.subarray(0, length)
      const agent = agentTrack.samples.subarray(0, length)
      return {
        stereo: () => wavStream([caller, agent], length, SAMPLE_RATE),
        caller: () => wavStream([caller], length, SAMPLE_RATE),
        agent: () => wavStream([agent], length, SAMPLE_RATE),
        durationMs: length / SAMPLES_PER_MS,
      }
    },
  }
}
