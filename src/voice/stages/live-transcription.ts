/**
 * Live speech recognition, for a server that streams (SttClient.openStream, models/stt-stream.ts): one stream for the
 * call, opened when the call starts and closed at its end; the utterance's audio goes out as the turn detector hears
 * it (`speech_audio`, its pre-roll first), so its text is ready about when the caller stops.
 *
 * A pause commits what was heard so far as a segment (its text is the pause's transcript, for the speculative end of
 * turn); the audio after it is kept back until the caller goes on (the silence of a pause that ends the turn is never
 * sent), then appended as the next segment. The utterance's transcript is its segments' texts joined: each said once,
 * whether the speculation on a pause was taken or dropped. A segment the stream could not transcribe has the frame's
 * whole audio uploaded instead (`transcribe`); once the stream is given up, frames go on without a transcript and the
 * transcriber uploads them as without it.
 */
import type { SttClient, SttStream } from '../../models/types'
import type { EarlyTranscript, Frame, Stage, StageContext } from '../stage'
import { VAD_RATE } from './caller-input'
import { transcribeAudio, type TranscriberOptions } from './transcriber'

type Utterance = {
  /** The texts of its committed segments, in order. */
  segments: Promise<string>[]
  /** 16 kHz samples appended since its last commit. */
  samples: number
  /** Audio after a pause, kept back until the caller resumes; null: audio goes out as it comes. */
  heldBack: Int16Array[] | null
}

export type StreamingSttClient = SttClient & Required<Pick<SttClient, 'openStream'>>

export const streams = (stt: SttClient): stt is StreamingSttClient => stt.openStream !== undefined

export function transcribeLive(stt: StreamingSttClient, options: TranscriberOptions): Stage {
  let context: StageContext
  let stream: SttStream
  let utterance: Utterance | null = null

  function commit(current: Utterance): void {
    options.onSttAudio?.(current.samples / VAD_RATE)
    current.samples = 0
    const text = stream.commit()
    // A failed segment is handled where its utterance's transcript is read.
    text.catch(() => undefined)
    current.segments.push(text)
  }

  function append(current: Utterance, pcm: Int16Array): void {
    current.samples += pcm.length
    stream.append(pcm)
  }

  /** The segments so far, joined; when one failed, `pcm` uploaded instead if `stillWanted`. */
  function transcriptOf(current: Utterance, pcm: Int16Array, stillWanted: () => boolean): EarlyTranscript {
    return Promise.all(current.segments).then(
      (texts) => ({ text: texts.filter(Boolean).join(' '), readyAtMs: context.now() }),
      () => (stillWanted() ? transcribeAudio(stt, pcm, context, options) : { text: '', readyAtMs: context.now() }),
    )
  }

  function onPause(pause: Extract<Frame, { kind: 'speech_paused' }>) {
    const current = utterance
    if (!current || !stream.usable) return context.push(pause)
    commit(current)
    current.heldBack = []
    // A pause the caller talked on is a dropped speculation: its audio is not uploaded then.
    const transcript = transcriptOf(current, pause.pcm, () => utterance === current && current.heldBack !== null)
    return context.push({ ...pause, transcript })
  }

  function onUtterance(ended: Extract<Frame, { kind: 'utterance' }>) {
    const current = utterance
    utterance = null
    if (!current || !stream.usable) return context.push(ended)
    if (current.heldBack === null) commit(current)
    return context.push({ ...ended, transcript: transcriptOf(current, ended.pcm, () => true) })
  }

  return {
    name: 'live transcription',
    start(given) {
      context = given
      stream = stt.openStream({ warn: (message) => context.warn(message) })
    },
    process(frame) {
      if (frame.kind === 'speech_started') {
        utterance = { segments: [], samples: 0, heldBack: null }
        return context.push(frame)
      }
      if (frame.kind === 'speech_audio') {
        if (utterance?.heldBack) utterance.heldBack.push(frame.pcm)
        else if (utterance) append(utterance, frame.pcm)
        return
      }
      if (frame.kind === 'speech_paused') return onPause(frame)
      if (frame.kind === 'speech_resumed' && utterance?.heldBack) {
        for (const pcm of utterance.heldBack) append(utterance, pcm)
        utterance.heldBack = null
      }
      if (frame.kind === 'utterance') return onUtterance(frame)
      return context.push(frame)
    },
    stop() {
      stream.close()
    },
  }
}
