import { and, eq } from 'drizzle-orm'
import { Type as t, type Static } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { workflowRuns } from '../db/schema'
import { notFound } from '../lib/errors'
import { readWavHeader, WavFormatError } from '../lib/wav'

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

/** Accumulates the peaks of interleaved 16-bit frames arriving in pieces of any length. */
function peakCounter(frames: number, channels: number, columns: number) {
  const framesPerColumn = Math.max(1, Math.ceil(frames / columns))
  const peaks = Array.from({ length: channels }, () => new Array<number>(columns).fill(0))
  let frame = 0
  let channel = 0
  let carry: number | null = null
  const sample = (value: number) => {
    const column = Math.min(columns - 1, Math.floor(frame / framesPerColumn))
    const level = Math.abs(value) / FULL_SCALE
    if (level > peaks[channel][column]) peaks[channel][column] = level
    if (++channel === channels) {
      channel = 0
      frame++
    }
  }
  return {
    add(bytes: Uint8Array) {
      let at = 0
      if (carry !== null && bytes.length > 0) {
        sample((((bytes[0] << 8) | carry) << 16) >> 16)
        carry = null
        at = 1
      }
      for (; at + 1 < bytes.length && frame < frames; at += 2) sample((((bytes[at + 1] << 8) | bytes[at]) << 16) >> 16)
      if (at < bytes.length && frame < frames) carry = bytes[at]
    },
    peaks: () => peaks.map((track) => track.map((level) => Math.round(Math.min(1, level) * 1000) / 1000)),
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
    .where(
      and(
        eq(workflowRuns.id, runId),
        eq(workflowRuns.organizationId, organizationId),
        eq(workflowRuns.workflowId, agentId),
      ),
    )
    .get()
  if (!run) throw notFound('Workflow run not found')
  const object = run.recordingKey ? await ctx.objects.get(run.recordingKey) : null
  if (!object) throw notFound('No recording available for this workflow run')
  let head: Uint8Array = new Uint8Array(0)
  let counter: ReturnType<typeof peakCounter> | null = null
  let duration = 0
  for await (const piece of object.stream()) {
    if (counter) {
      counter.add(piece)
      continue
    }
    head = concat(head, piece)
    const header = readHeader(head)
    if (!header) continue
    const { format, dataOffset } = header
    const frames = Math.floor((object.size - dataOffset) / (format.channels * 2))
    duration = frames / format.sampleRate
    counter = peakCounter(frames, format.channels, columns)
    counter.add(head.subarray(dataOffset))
  }
  if (!counter) throw notFound('No recording available for this workflow run')
  return { duration_seconds: Math.round(duration * 1000) / 1000, tracks: counter.peaks() }
}

/** The WAV's header once its bytes reach the samples; a file Ringbase cannot read counts as no recording. */
function readHeader(bytes: Uint8Array) {
  try {
    const header = readWavHeader(bytes)
    if (!header && bytes.length > 65_536) throw new WavFormatError('no data chunk in the first 64 KiB')
    return header
  } catch (error) {
    if (error instanceof WavFormatError) throw notFound('No recording available for this workflow run')
    throw error
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.length + b.length)
  joined.set(a)
  joined.set(b, a.length)
  return joined
}
