import { Type as t, type Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { workflowRuns } from '../db/schema'
import { notFound } from '../lib/errors'
import { pcmStreamReader, WavFormatError } from '../lib/wav'
import { nextTurn } from '../lib/next-turn'
import { runOfOrganization } from './detail'
import type { StoredObject } from '../storage/object-store'

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
/**
 * Peaks already drawn, the most recently asked last: a stored recording never changes, and an hour's call costs about
 * 0.3 s of CPU to read again. Keyed by store location, object key, size and columns; requests arriving while one is
 * being drawn share it.
 */
const drawn = new Map<string, Promise<Static<typeof RecordingPeaks>>>()
const DRAWN_KEPT = 32

/** The loop is given a turn this often: an hour's recording is 115 MB, read from a file without a pause otherwise. */
const SLICE_MS = 5

/** Accumulates the peaks of interleaved frames arriving in pieces of any whole number of samples. */
function peakCounter(frames: number, channels: number, columns: number) {
  const framesPerColumn = Math.max(1, Math.ceil(frames / columns))
  const peaks = Array.from({ length: channels }, () => new Int32Array(columns))
  let frame = 0
  let channel = 0
  return {
    add(samples: Int16Array) {
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
  const key = `${ctx.objects.location}/${run.recordingKey}:${object.size}:${columns}`
  const known = drawn.get(key)
  if (known) {
    drawn.delete(key)
    drawn.set(key, known)
    return known
  }
  const drawing = drawPeaks(object, columns)
  drawn.set(key, drawing)
  drawing.catch(() => drawn.delete(key))
  if (drawn.size > DRAWN_KEPT) drawn.delete(drawn.keys().next().value!)
  return drawing
}

/** Reads the stored WAV as it streams, giving the loop a turn every SLICE_MS. */
async function drawPeaks(object: StoredObject, columns: number): Promise<Static<typeof RecordingPeaks>> {
  const reader = pcmStreamReader()
  let counter: ReturnType<typeof peakCounter> | null = null
  let duration = 0
  let sliceStartedAt = performance.now()
  for await (const piece of object.stream()) {
    if (performance.now() - sliceStartedAt > SLICE_MS) {
      await nextTurn()
      sliceStartedAt = performance.now()
    }
    const samples = readSamples(reader, piece)
    const header = reader.header()
    if (!counter && header) {
      const frames = Math.floor((object.size - header.dataOffset) / (header.format.channels * 2))
      duration = frames / header.format.sampleRate
      counter = peakCounter(frames, header.format.channels, columns)
    }
    if (samples) counter?.add(samples)
  }
  if (!counter) throw noRecording()
  return { duration_seconds: Math.round(duration * 1000) / 1000, tracks: counter.peaks() }
}

/** The piece's whole samples; a file Ringbase cannot read counts as no recording. */
function readSamples(reader: ReturnType<typeof pcmStreamReader>, piece: Uint8Array): Int16Array | null {
  try {
    return reader.push(piece)
  } catch (error) {
    if (error instanceof WavFormatError) throw noRecording()
    throw error
  }
}
