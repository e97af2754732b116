import { Type as t, type Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { workflowRuns } from '../db/schema'
import { notFound } from '../lib/errors'
import { readWavHeader, WavFormatError } from '../lib/wav'
import { nextTurn } from '../lib/next-turn'
import { concatBytes } from '../lib/bytes'
import { runOfOrganization } from './detail'

/**
 * A run's recording drawn as waveforms without sending it: the loudest sample of each track per column, read from the
 * stored stereo WAV as it streams (a call of an hour is 115 MB; the console drew it from the whole file before).
 */

export const RecordingPeaks = t.Object({
  duration_seconds: t.Number(),
  /** Per track (caller, then agent), per column: the loudest sample, 0 (silence) to 1 (full scale). */
  tracks: t.Array(t.Array(t.Number({ minimum: 0, maximum: 1 }))),
})

const FULL_SCALE = 32768
const noRecording = () => notFound('No recording available for this workflow run')
/** The loop is given a turn this often: an hour's recording is 115 MB, read from a file without a pause otherwise. */
const SLICE_MS = 5

/** Accumulates the peaks of interleaved 16-bit frames arriving in pieces of any length. */
function peakCounter(frames: number, channels: number, columns: number) {
  const framesPerColumn = Math.max(1, Math.ceil(frames / columns))
  const peaks = Array.from({ length: channels }, () => new Int32Array(columns))
  let frame = 0
  let channel = 0
  /** The odd byte a piece ended with: the first half of a sample the next piece completes. */
  let carry: Uint8Array | null = null
  return {
    add(piece: Uint8Array) {
      const bytes = carry ? concatBytes(carry, piece) : piece
      const whole = bytes.length - (bytes.length % 2)
      carry = whole < bytes.length ? bytes.slice(whole) : null
      const samples =
        bytes.byteOffset % 2 === 0
          ? new Int16Array(bytes.buffer, bytes.byteOffset, whole / 2)
          : new Int16Array(bytes.slice(0, whole).buffer)
      for (let index = 0; index < samples.length && frame < frames; index++) {
        const value = samples[index]
        const level = value < 0 ? -value : value
        const track = peaks[channel]
        const column = Math.min(columns - 1, (frame / framesPerColumn) | 0)
        if (level > track[column]) track[column] = level
        if (++channel === channels) {
          channel = 0
          frame++
        }
      }
    },
    peaks: () =>
      peaks.map((track) =>
        Array.from(track, (level) => Math.round((Math.min(FULL_SCALE, level) / FULL_SCALE) * 1000) / 1000),
      ),
  }
}

/** The peaks of the run's stereo recording; 404 when the run (of this organization and agent) has none. */
export async function recordingPeaks(
  ctx: AppContext,
  organizationId: number,
  agentId: number,
  runId: number,
  columns: number,
): Promise<Static<typeof RecordingPeaks>> {
  const run = ctx.db
    .select({ recordingKey: workflowRuns.recordingKey })
    .from(workflowRuns)
    .where(runOfOrganization(organizationId, runId, agentId))
    .get()
  if (!run) throw notFound('Workflow run not found')
  const object = run.recordingKey ? await ctx.objects.get(run.recordingKey) : null
  if (!object) throw noRecording()
  let head: Uint8Array = new Uint8Array(0)
  let counter: ReturnType<typeof peakCounter> | null = null
  let duration = 0
  let sliceStartedAt = performance.now()
  for await (const piece of object.stream()) {
    if (performance.now() - sliceStartedAt > SLICE_MS) {
      await nextTurn()
      sliceStartedAt = performance.now()
    }
    if (counter) {
      counter.add(piece)
      continue
    }
    head = concatBytes(head, piece)
    const header = readHeader(head)
    if (!header) continue
    const { format, dataOffset } = header
    const frames = Math.floor((object.size - dataOffset) / (format.channels * 2))
    duration = frames / format.sampleRate
    counter = peakCounter(frames, format.channels, columns)
    counter.add(head.subarray(dataOffset))
  }
  if (!counter) throw noRecording()
  return { duration_seconds: Math.round(duration * 1000) / 1000, tracks: counter.peaks() }
}

/** The WAV's header once its bytes reach the samples; a file Ringbase cannot read counts as no recording. */
function readHeader(bytes: Uint8Array) {
  try {
    const header = readWavHeader(bytes)
    if (!header && bytes.length > 65_536) throw new WavFormatError('no data chunk in the first 64 KiB')
    return header
  } catch (error) {
    if (error instanceof WavFormatError) throw noRecording()
    throw error
  }
}
