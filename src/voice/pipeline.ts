/**
 * A voice call: audio between a MediaTransport and a Conversation, as a chain of small stages (pipecat / LiveKit
 * Agents style). No HTTP, no database: the caller gives the transport, the model clients and the Conversation, and
 * persists what `run` returns.
 *
 *   caller audio:  transport frames → µ-law decode → recorder (left) + answering-machine detector
 *                  → 8→16 kHz → turn detector (WebRTC VAD) → utterance → STT → conversation.userMessage
 *   agent speech:  conversation `agent_text` → sentence splitter → TTS (model or built-in voice), one sentence at a
 *                  time → 8 kHz → recorder (right) → µ-law → transport.send, then MARK_MEDIA: when the mark is
 *                  played the sentence was heard (what a barge-in keeps) and after a turn's last sentence the
 *                  conversation learns it ended (agentSpeechEnded: the idle timer starts there)
 *
 * Interruption is one signal every stage obeys: when the caller starts speaking (past the VAD start window) while
 * the agent is heard on an interruptible turn (`conversation.canInterrupt`), the queued audio is flushed at once,
 * the sentence being synthesised is aborted, queued sentences are dropped, and the conversation is interrupted with
 * the sentences actually played (its LLM stream is aborted). Agent speech that starts while the caller is talking is
 * cut the same way. On a turn that cannot be interrupted (greeting, transition speech, `allow_interrupt: false`)
 * the agent finishes speaking; what the caller said meanwhile is answered after it.
 *
 * With `bargeInMinWords` an interruption waits for the transcript instead: caller speech over an interruptible turn
 * cuts it only if it has that many words, and shorter speech ("mm-hm") is dropped as a backchannel.
 *
 * While answering-machine detection is undecided (outbound calls) the caller's turns are held from the conversation:
 * the agent must not answer a machine's greeting. The detector's 'person' verdict (or its expiry, or a DTMF key)
 * gives them to the conversation as one turn; its 'machine' verdict ends the call with them unanswered. The greeting
 * and the conversation's own speech are not held.
 *
 * Timing comes from the transport's clock (`now`), never from frame counts: Asterisk sends no frames while the
 * line is silent, so a timer ends an utterance when frames stop. The conversation's `tick` runs every
 * `tickIntervalMs` while nobody speaks (idle reprompt, idle hang-up, max duration). DTMF digits are collected until
 * `#` or `dtmfTimeoutMs` without a key, then given to the conversation as the caller's turn ("DTMF: 12#").
 *
 * Per turn the pipeline measures the response time: from the end of the caller's speech to the first agent audio
 * sent, minus the stop window (the silence the turn detector must hear before the turn is over). That is the
 * engine's own overhead plus the models' latency, never hidden.
 */
import type { Conversation, ConversationEvent } from '../conversation/engine'
import type { EndReason } from '../conversation/record'
import type { Clock } from '../lib/clock'
import type { SttClient, TtsClient } from '../models/types'
import { pcm16ToUlaw, ulawToPcm16 } from './g711'
import type { MediaClose, MediaTransport } from './media-transport'
import { createCallRecorder, type CallRecording } from './recorder'
import { createResampler, type Resampler } from './resample'
import { createSentenceSplitter, type SentenceSplitter } from './sentences'
import { createTurnDetector, DEFAULT_TURN_PARAMETERS, type TurnEvent, type TurnParameters } from './turns'
import type { VadEngine, VadMode } from './vad'
import { createVoicemailDetector, type VoicemailDetector, type VoicemailParameters, type VoicemailVerdict } from './voicemail'

export type VoicemailOptions = {
  parameters?: Partial<VoicemailParameters>
  /** Spoken after the beep before hanging up; without it the call ends at the beep. */
  message?: string | null
}

export type VoicePipelineOptions = {
  transport: MediaTransport
  stt: SttClient
  /** A model's TTS client, or the built-in voice. */
  tts: TtsClient
  vad: VadEngine
  /** WebRTC VAD aggressiveness; 3 (the default) suits telephone lines best. */
  vadMode?: VadMode
  turn?: Partial<TurnParameters>
  /**
   * Caller speech over an interruptible agent turn interrupts it only when its transcript has this many words, and is
   * dropped otherwise (the reference's `min_words` turn start); absent or 0: any speech interrupts once it starts.
   */
  bargeInMinWords?: number
  /** Answering-machine detection (outbound calls); null or absent: off. */
  voicemail?: VoicemailOptions | null
  /** The conversation's clock (epoch ms): utterance times are given to the conversation on it. */
  clock: Clock
  /** The transport's clock (monotonic ms). */
  now?: () => number
  /** How often the conversation's `tick` runs while nobody speaks. */
  tickIntervalMs?: number
  /** Collected DTMF digits are sent after this long without another key ('#' sends at once). */
  dtmfTimeoutMs?: number
  /** After the media closes on its own, how long to wait for `stop` (a hang-up seen elsewhere) before calling it lost. */
  mediaLossGraceMs?: number
  /** A graceful end waits at most this long for the last words to be heard. */
  drainTimeoutMs?: number
  /** Problems the call survives (an STT or TTS failure): for the run's log. */
  onWarning?: (message: string) => void
  /** Seconds of audio sent to speech recognition, per utterance (usage). */
  onSttAudio?: (seconds: number) => void
  /** Characters sent to speech synthesis, per sentence (usage). */
  onTtsText?: (characters: number) => void
}

/** One caller turn answered by the agent. Times are ms on the transport's clock, durations in ms. */
export type VoiceTurnMetric = {
  /** When the caller stopped speaking (the turn detector knew it `stop window` later). */
  speechEndedAtMs: number
  /** First agent audio sent − end of speech − stop window: the pipeline's and the models' share. */
  responseMs: number
  sttMs: number
  /** Caller's text given to the conversation → first agent text (LLM time to first token, plus any transition). */
  firstTextMs: number | null
  /** First sentence ready → its first audio (TTS time to first byte, resampling, encoding). */
  firstAudioMs: number | null
}

export type VoiceCallResult = {
  endReason: EndReason
  /** The media closed by the far end while the call was on and no hang-up explained it. */
  mediaLost: MediaClose | null
  /** Answering machine detected: when (ms after the start) and whether the workflow's message was played. */
  voicemail: { detectedAfterMs: number; messageLeft: boolean } | null
  /** How long answering-machine detection held the answer to the caller's first turn (0: it had decided by then); null: detection off, or no caller turn while it ran. */
  firstAnswerHeldMs: number | null
  recording: CallRecording
  turns: VoiceTurnMetric[]
}

export type VoicePipeline = {
  /** Every event of the Conversation: pass this as (part of) its `onEvent`. */
  conversationEvent(event: ConversationEvent): void
  /** Starts the conversation; resolves when it has ended, its last words were heard, and the media is closed. */
  run(conversation: Conversation): Promise<VoiceCallResult>
  /** A DTMF key the caller pressed (from the call's signalling, e.g. ARI ChannelDtmfReceived). */
  dtmf(digit: string): void
  /** The call is over from outside (caller hung up, max duration): ends the conversation now, stops the audio. */
  stop(reason: EndReason): Promise<void>
}

const DEFAULTS = { vadMode: 3 as VadMode, tickIntervalMs: 1_000, dtmfTimeoutMs: 2_000, mediaLossGraceMs: 500, drainTimeoutMs: 30_000 }
const LINE_RATE = 8000
const VAD_RATE = 16000
const MEDIA_LOST_REASON: EndReason = 'unexpected_error'

/** What the agent is saying in one conversation turn, until the caller has heard all of it. */
type TurnSpeech = {
  turn: number
  splitter: SentenceSplitter
  /** The conversation is still streaming the turn's text. */
  streaming: boolean
  /** Sentences waiting for or in synthesis. */
  pending: number
  /** Sentences sent whose mark has not come back. */
  marks: number
  /** Sentences played in full, in order. */
  heard: string[]
}

type Sentence = { turn: number; text: string }

type CallerTurn = { text: string; timing: { startMs?: number; endMs?: number }; metric: OpenMetric | null }

type OpenMetric = Omit<VoiceTurnMetric, 'responseMs' | 'firstTextMs' | 'firstAudioMs'> & {
  endOfTurnAtMs: number
  messageAtMs?: number
  firstTextAtMs?: number
  firstSentenceAtMs?: number
}

export function createVoicePipeline(options: VoicePipelineOptions): VoicePipeline {
  const { transport, stt, tts, clock } = options
  const now = options.now ?? (() => performance.now())
  const settings = {
    vadMode: options.vadMode ?? DEFAULTS.vadMode,
    tickIntervalMs: options.tickIntervalMs ?? DEFAULTS.tickIntervalMs,
    dtmfTimeoutMs: options.dtmfTimeoutMs ?? DEFAULTS.dtmfTimeoutMs,
    mediaLossGraceMs: options.mediaLossGraceMs ?? DEFAULTS.mediaLossGraceMs,
    drainTimeoutMs: options.drainTimeoutMs ?? DEFAULTS.drainTimeoutMs,
  }
  const turnParameters = { ...DEFAULT_TURN_PARAMETERS, ...options.turn }
  const warn = (message: string) => options.onWarning?.(message)

  let conversation: Conversation | null = null
  let startedAtMs = 0
  const recorder = createCallRecorder(now())

  // ---- agent speech ----
  const speeches = new Map<number, TurnSpeech>()
  const sentences: Sentence[] = []
  let synthesis: { turn: number; controller: AbortController } | null = null
  /** Set and cleared synchronously with the loop's last check, so a sentence queued meanwhile is never stranded. */
  let speaking = false
  /** Agent turns up to this index were cut: their late text is ignored. */
  let cutThroughTurn = -1
  let idleWaiters: (() => void)[] = []

  // ---- caller audio ----
  const vad = options.vad.createVad(settings.vadMode)
  const upsampler = createResampler(LINE_RATE, VAD_RATE)
  const turns = createTurnDetector(vad, turnParameters)
  let voicemail: VoicemailDetector | null = options.voicemail ? createVoicemailDetector(options.voicemail.parameters) : null
  let voicemailFound: VoiceCallResult['voicemail'] = null
  let voicemailTimer: { atMs: number; handle: ReturnType<typeof setTimeout> } | undefined
  /** Caller turns kept from the conversation until answering-machine detection decides; null when not holding. */
  let answerHold: { turns: CallerTurn[]; sinceMs: number | null } | null = voicemail ? { turns: [], sinceMs: null } : null
  let firstAnswerHeldMs: number | null = null
  let callerSpeaking = false
  let stopTimer: ReturnType<typeof setTimeout> | undefined
  /** Utterances reach the conversation in the order spoken, each after its transcription. */
  let deliveries: Promise<void> = Promise.resolve()
  let dtmfDigits = ''
  let dtmfTimer: ReturnType<typeof setTimeout> | undefined

  // ---- metrics and the end ----
  const metrics: VoiceTurnMetric[] = []
  let openMetric: OpenMetric | null = null
  let ending = false
  let endReason: EndReason | null = null
  let endGraceful = false
  let mediaLost: MediaClose | null = null
  let stopRequested = false
  let onEnded: () => void = () => {}
  const ended = new Promise<void>((resolve) => { onEnded = resolve })
  let onStopped: () => void = () => {}
  const stopped = new Promise<void>((resolve) => { onStopped = resolve })

  const clockTime = (atMs: number) => clock.now() - (now() - atMs)

  // ---- sending speech ----

  function sendAgentAudio(pcm8k: Int16Array): void {
    if (pcm8k.length === 0 || transport.closed) return
    const atMs = now()
    recorder.agent(pcm8k, atMs)
    transport.send(pcm16ToUlaw(pcm8k))
    if (openMetric?.messageAtMs !== undefined) closeMetric(openMetric, atMs)
  }

  /** Synthesises `text` and sends its audio as it comes; true when any audio was sent. */
  async function synthesizeAndSend(text: string, signal: AbortSignal): Promise<boolean> {
    let resampler: Resampler | undefined
    let sent = false
    options.onTtsText?.(text.length)
    try {
      for await (const chunk of tts.synthesize(text, { signal })) {
        if (signal.aborted) break
        if (chunk.sampleRate !== LINE_RATE && resampler?.fromRate !== chunk.sampleRate) resampler = createResampler(chunk.sampleRate, LINE_RATE)
        sendAgentAudio(chunk.sampleRate === LINE_RATE ? chunk.pcm : resampler!.process(chunk.pcm))
        sent = true
      }
    } catch (error) {
      if (!signal.aborted) warn(`Speech synthesis failed (${tts.ref.service}/${tts.ref.model}): ${(error as Error).message}`)
    }
    return sent && !signal.aborted
  }

  async function speakQueued(): Promise<void> {
    try {
      await speakSentences()
    } finally {
      speaking = false
    }
  }

  async function speakSentences(): Promise<void> {
    while (sentences.length > 0 && !transport.closed) {
      const sentence = sentences.shift()!
      const speech = speeches.get(sentence.turn)
      if (!speech) continue
      const controller = new AbortController()
      synthesis = { turn: sentence.turn, controller }
      if (openMetric?.messageAtMs !== undefined) openMetric.firstSentenceAtMs ??= now()
      const sent = await synthesizeAndSend(sentence.text, controller.signal)
      synthesis = null
      if (speeches.get(sentence.turn) !== speech) continue
      speech.pending -= 1
      if (!sent) {
        settleTurn(speech)
        continue
      }
      speech.marks += 1
      void transport.mark().then((outcome) => {
        speech.marks -= 1
        if (outcome === 'played') speech.heard.push(sentence.text)
        settleTurn(speech)
      })
    }
  }

  function queueSentence(speech: TurnSpeech, text: string): void {
    speech.pending += 1
    sentences.push({ turn: speech.turn, text })
    if (speaking) return
    speaking = true
    void speakQueued()
  }

  /** A turn's speech is over when its text is complete and every sentence was played (or failed). */
  function settleTurn(speech: TurnSpeech): void {
    if (speeches.get(speech.turn) !== speech || speech.streaming || speech.pending > 0 || speech.marks > 0) return
    speeches.delete(speech.turn)
    conversation?.agentSpeechEnded({ turn: speech.turn, atMs: clockTime(now()) })
    notifyIfIdle()
  }

  function notifyIfIdle(): void {
    if (speeches.size > 0) return
    const waiters = idleWaiters
    idleWaiters = []
    for (const resolve of waiters) resolve()
  }

  const whenSpeechIdle = () => speeches.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))

  /** The turn the caller is hearing (the oldest with speech still to play), if any. */
  function heardTurn(): TurnSpeech | undefined {
    let oldest: TurnSpeech | undefined
    for (const speech of speeches.values()) if (!oldest || speech.turn < oldest.turn) oldest = speech
    return oldest
  }

  /** Drops every agent sentence not yet played: flushes the transport, aborts synthesis, forgets the turns. */
  function silenceAgent(): void {
    transport.flush()
    recorder.agentFlushed(now())
    sentences.length = 0
    synthesis?.controller.abort()
    for (const turn of speeches.keys()) cutThroughTurn = Math.max(cutThroughTurn, turn)
    speeches.clear()
    notifyIfIdle()
  }

  /** Barge-in on the turn being heard: the caller keeps only what was played. */
  function bargeIn(speech: TurnSpeech): void {
    const heardText = speech.heard.join(' ')
    silenceAgent()
    void conversation?.interrupt({ turn: speech.turn, heardText }).catch((error) => warn(`Interrupting the agent failed: ${(error as Error).message}`))
  }

  /** Cuts the agent when the caller is talking over an interruptible turn; false when the turn must be finished. */
  function yieldToCaller(): boolean {
    const speech = heardTurn()
    if (!speech) return true
    if (!conversation?.canInterrupt(speech.turn)) return false
    bargeIn(speech)
    return true
  }

  // ---- conversation events ----

  function onAgentText(turn: number, text: string): void {
    if (turn <= cutThroughTurn || ending) return
    let speech = speeches.get(turn)
    if (!speech) {
      speech = { turn, splitter: createSentenceSplitter(), streaming: true, pending: 0, marks: 0, heard: [] }
      speeches.set(turn, speech)
      if (openMetric?.messageAtMs !== undefined) openMetric.firstTextAtMs ??= now()
      if (callerSpeaking && !options.bargeInMinWords && conversation?.canInterrupt(turn)) {
        bargeIn(speech)
        return
      }
    }
    for (const sentence of speech.splitter.push(text)) queueSentence(speech, sentence)
  }

  function onAgentTurnDone(turn: number, interrupted: boolean): void {
    const speech = speeches.get(turn)
    if (!speech) return
    speech.streaming = false
    if (interrupted) {
      // Cut by the conversation itself (an ending, a new user message): what was sent may finish, nothing more.
      for (let index = sentences.length - 1; index >= 0; index--) {
        if (sentences[index].turn !== turn) continue
        sentences.splice(index, 1)
        speech.pending -= 1
      }
      if (synthesis?.turn === turn) synthesis.controller.abort()
    } else {
      const rest = speech.splitter.flush()
      if (rest) queueSentence(speech, rest)
    }
    settleTurn(speech)
  }

  function conversationEvent(event: ConversationEvent): void {
    switch (event.type) {
      case 'agent_text':
        return onAgentText(event.turn, event.text)
      case 'agent_turn_done':
        return onAgentTurnDone(event.turn, event.interrupted)
      case 'play_recording':
        warn(`Recorded audio (${event.purpose}, recording ${event.recording_id}) is not played on voice calls yet`)
        if (event.purpose === 'tool_message') clipSkipped()
        return
      case 'ended':
        endReason = event.reason
        endGraceful = event.graceful
        ending = true
        onEnded()
        return
    }
  }

  /**
   * A tool's clip (an end_call goodbye) is waited for by the conversation until `agentSpeechEnded`; unplayed, it is
   * over once what was said before it has been heard. After a macrotask: the tool call that said it is still running,
   * and its end (the conversation's closing) is set when it returns.
   */
  function clipSkipped(): void {
    void whenSpeechIdle().then(() => setTimeout(() => {
      if (!ending) conversation?.agentSpeechEnded()
    }))
  }

  // ---- caller audio ----

  function onCallerAudio(ulaw: Uint8Array, atMs: number): void {
    if (ending) return
    const pcm8k = ulawToPcm16(ulaw)
    recorder.caller(pcm8k, atMs)
    if (voicemail) watchForVoicemail(pcm8k, atMs)
    handleTurnEvents(turns.push(upsampler.process(pcm8k), atMs))
    if (callerSpeaking) armStopTimer()
  }

  /**
   * Frames stop while the line is silent: a timer ends the utterance when the stop window after its last speech has
   * passed (later speech moves that moment: the timer then looks again).
   */
  function armStopTimer(): void {
    const endsAtMs = turns.utteranceEndsAtMs
    if (stopTimer !== undefined || endsAtMs === null) return
    stopTimer = setTimeout(() => {
      stopTimer = undefined
      if (ending) return
      handleTurnEvents(turns.tick(now()))
      if (callerSpeaking) armStopTimer()
    }, Math.max(0, endsAtMs - now()))
  }

  function handleTurnEvents(events: TurnEvent[]): void {
    for (const event of events) {
      if (event.type === 'speech_started') {
        callerSpeaking = true
        conversation?.noteUserActivity(clockTime(event.atMs))
        if (!options.bargeInMinWords) yieldToCaller()
      } else {
        callerSpeaking = false
        clearTimeout(stopTimer)
        stopTimer = undefined
        transcribeInOrder(event.pcm, event.startedAtMs, event.endedAtMs)
      }
    }
  }

  function transcribeInOrder(pcm16k: Int16Array, startedAtMs: number, endedAtMs: number): void {
    const requestedAtMs = now()
    options.onSttAudio?.(pcm16k.length / VAD_RATE)
    const text = stt.transcribe(pcm16k).catch((error: Error) => {
      warn(`Speech recognition failed (${stt.ref.service}/${stt.ref.model}): ${error.message}`)
      return ''
    })
    deliveries = deliveries.then(async () => {
      const heard = (await text).trim()
      if (!heard || ending || isBackchannel(heard)) return
      const metric: OpenMetric = { speechEndedAtMs: endedAtMs - turnParameters.stopMs, endOfTurnAtMs: endedAtMs, sttMs: now() - requestedAtMs }
      const turn = { text: heard, timing: { startMs: clockTime(startedAtMs), endMs: clockTime(metric.speechEndedAtMs) }, metric }
      if (answerHold) {
        answerHold.sinceMs ??= now()
        answerHold.turns.push(turn)
        return
      }
      await tellConversation(turn)
    })
  }

  /** With `bargeInMinWords`: too few words said over an interruptible agent turn are no turn at all. */
  function isBackchannel(text: string): boolean {
    if (!options.bargeInMinWords) return false
    const speech = heardTurn()
    if (!speech || !conversation?.canInterrupt(speech.turn)) return false
    return text.split(/\s+/).filter(Boolean).length < options.bargeInMinWords
  }

  /** The hold is over: the held turns go to the conversation as one turn, or are dropped (a machine). */
  function endAnswerHold(answer: boolean): void {
    const hold = answerHold
    answerHold = null
    if (!hold || hold.sinceMs === null) return
    firstAnswerHeldMs = now() - hold.sinceMs
    if (!answer) return
    const { turns: held } = hold
    const turn: CallerTurn = {
      text: held.map(({ text }) => text).join(' '),
      timing: { startMs: held[0].timing.startMs, endMs: held.at(-1)!.timing.endMs },
      metric: held.at(-1)!.metric,
    }
    // At once, not after the deliveries queued: a turn still being transcribed was spoken after these.
    void tellConversation(turn)
  }

  /** Gives the caller's turn to the conversation once the agent may be cut or has finished its turn. */
  async function tellConversation({ text, timing, metric }: CallerTurn): Promise<void> {
    if (!yieldToCaller()) await Promise.race([whenSpeechIdle(), ended])
    if (ending || !conversation) return
    if (options.voicemail) firstAnswerHeldMs ??= 0
    openMetric = metric
    if (metric) metric.messageAtMs = now()
    void conversation.userMessage(text, timing)
      .then(() => {
        // A reply without a word (an empty answer, a cut one) has no response time to measure.
        if (openMetric === metric && metric?.firstTextAtMs === undefined) openMetric = null
      })
      .catch((error) => warn(`The conversation failed on the caller's turn: ${(error as Error).message}`))
  }

  function closeMetric(metric: OpenMetric, firstAudioAtMs: number): void {
    openMetric = null
    metrics.push({
      speechEndedAtMs: metric.speechEndedAtMs,
      responseMs: firstAudioAtMs - metric.endOfTurnAtMs,
      sttMs: metric.sttMs,
      firstTextMs: metric.firstTextAtMs === undefined ? null : metric.firstTextAtMs - metric.messageAtMs!,
      firstAudioMs: metric.firstSentenceAtMs === undefined ? null : firstAudioAtMs - metric.firstSentenceAtMs,
    })
  }

  function watchForVoicemail(pcm8k: Int16Array, atMs: number): void {
    const sinceStart = atMs - startedAtMs
    if (sinceStart > voicemail!.expiresAfterMs) return stopVoicemailDetection()
    onVoicemailVerdict(voicemail!.push(pcm8k, sinceStart), sinceStart)
  }

  function onVoicemailVerdict(verdict: VoicemailVerdict | null, sinceStart: number): void {
    if (verdict === 'machine') return voicemailDetected(sinceStart)
    if (verdict === 'person') endAnswerHold(true)
    armVoicemailTimer()
  }

  /**
   * Frames stop while the line is silent: a timer gives the detector the time it asked for (a beep's end, a pause), or
   * its expiry. Like the stop timer it may fire early (sound moved that moment) and then looks again; it is only moved
   * to an earlier moment.
   */
  function armVoicemailTimer(): void {
    const detector = voicemail
    if (!detector || ending) return
    const atMs = startedAtMs + Math.min(detector.nextCheckAtMs ?? Infinity, detector.expiresAfterMs)
    if (voicemailTimer && voicemailTimer.atMs <= atMs) return
    clearTimeout(voicemailTimer?.handle)
    voicemailTimer = {
      atMs,
      handle: setTimeout(() => {
        voicemailTimer = undefined
        if (voicemail !== detector || ending) return
        const sinceStart = now() - startedAtMs
        if (sinceStart >= detector.expiresAfterMs) stopVoicemailDetection()
        else onVoicemailVerdict(detector.tick(sinceStart), sinceStart)
      }, Math.max(0, atMs - now())),
    }
  }

  /** Nothing more can be decided (or a DTMF key showed a person): held turns are answered. */
  function stopVoicemailDetection(): void {
    voicemail = null
    clearTimeout(voicemailTimer?.handle)
    voicemailTimer = undefined
    endAnswerHold(true)
  }

  function voicemailDetected(afterMs: number): void {
    voicemail = null
    endAnswerHold(false)
    voicemailFound = { detectedAfterMs: afterMs, messageLeft: false }
    silenceAgent()
    void conversation?.end('voicemail_detected')
  }

  // ---- DTMF ----

  function sendDigits(): void {
    clearTimeout(dtmfTimer)
    dtmfTimer = undefined
    const digits = dtmfDigits
    dtmfDigits = ''
    if (!digits) return
    deliveries = deliveries.then(() => tellConversation({ text: `DTMF: ${digits}`, timing: {}, metric: null }))
  }

  // ---- the call ----

  async function leaveVoicemailMessage(message: string): Promise<boolean> {
    const sent = await synthesizeAndSend(message, new AbortController().signal)
    if (!sent) return false
    const outcome = await Promise.race([transport.mark(), stopped.then(() => 'stopped' as const)])
    return outcome === 'played'
  }

  async function run(given: Conversation): Promise<VoiceCallResult> {
    conversation = given
    startedAtMs = now()
    transport.onAudio(onCallerAudio)
    transport.onClose((close) => {
      if (close.initiatedBy === 'app' || ending) return
      setTimeout(() => {
        if (ending || stopRequested) return
        mediaLost = close
        warn(`The media connection closed during the call (code ${close.code}${close.reason ? `: ${close.reason}` : ''})`)
        void given.end(MEDIA_LOST_REASON)
      }, settings.mediaLossGraceMs)
    })
    armVoicemailTimer()
    const ticker = setInterval(() => {
      if (!ending && !callerSpeaking && speeches.size === 0) void given.tick().catch((error) => warn(`The conversation tick failed: ${(error as Error).message}`))
    }, settings.tickIntervalMs)
    void given.start().catch((error) => warn(`The conversation failed to start: ${(error as Error).message}`))

    await ended
    clearInterval(ticker)
    clearTimeout(stopTimer)
    clearTimeout(voicemailTimer?.handle)
    clearTimeout(dtmfTimer)
    const message = options.voicemail?.message?.trim()
    if (voicemailFound && message && !stopRequested) {
      voicemailFound.messageLeft = await leaveVoicemailMessage(message)
    } else if (endGraceful && !stopRequested) {
      let drainTimer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([whenSpeechIdle(), stopped, new Promise<void>((resolve) => { drainTimer = setTimeout(resolve, settings.drainTimeoutMs) })])
      clearTimeout(drainTimer)
    }
    if (speeches.size > 0) silenceAgent()
    synthesis?.controller.abort()
    const endedAtMs = now()
    transport.close()
    vad.free()
    return {
      endReason: endReason!,
      mediaLost,
      voicemail: voicemailFound,
      firstAnswerHeldMs,
      recording: recorder.finish(endedAtMs),
      turns: metrics,
    }
  }

  return {
    conversationEvent,
    run,
    dtmf(digit) {
      if (ending || !/^[0-9A-D*#]$/.test(digit)) return
      conversation?.noteUserActivity()
      // Machines press no keys.
      if (voicemail) stopVoicemailDetection()
      if (!dtmfDigits) yieldToCaller()
      dtmfDigits += digit
      clearTimeout(dtmfTimer)
      if (digit === '#') sendDigits()
      else dtmfTimer = setTimeout(sendDigits, settings.dtmfTimeoutMs)
    },
    async stop(reason) {
      stopRequested = true
      onStopped()
      if (!conversation) return
      await conversation.end(reason)
    },
  }
}
