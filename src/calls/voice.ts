import { renderTemplate } from '../definition/template-variables'
import type { AppContext } from '../context'
import { openRunSession, RunSessionError, type RunSession } from '../runs/run-session'
import { isPlainObject } from '../lib/values'
import { attachArtifact, type RunArtifact } from '../runs/artifacts'
import { getRun, updateRun } from '../runs/service'
import type { AnsweredCall, ConversationHooks } from '../telephony/ari/call-session'
import { settleReportedAttempt, type ContactAttempts } from './outcomes'
import { timeLimitOf } from './time-limit'
import {
  createVoicePipeline,
  engineShareMs,
  type VoiceCallResult,
  type VoicemailOptions,
  type VoicePipeline,
  type VoicePipelineOptions,
} from '../voice/pipeline'
import type { CallRecording } from '../voice/recorder'
import { PARTIAL_DIR } from '../storage/object-store'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { loadVadEngine, type VadEngine } from '../voice/vad'
import { loadNoiseEngine, type NoiseEngine } from '../voice/noise'
import { speakBuiltinLine, ttsWithBuiltinFallback } from '../voice/fallback'
import { modelFailureLineOf, unavailableCallOf, type ModelFailureLine } from '../definition/fallback-lines'
import { modelFailureOf, SERVICE_NAMES, type ModelFailure } from '../models/failures'
import type { RealtimeVoiceOptions } from '../voice/stages/realtime'
import type { ModelTimeouts } from '../models/http'
import type { EndReason } from '../conversation/record'
import type { Conversation } from '../conversation/engine'

/**
 * The conversation of an answered voice call: the run session (models, the Conversation, the run written as it goes)
 * driven by the voice pipeline over the call's media leg. When the conversation is over the call's own results are
 * stored: the recordings (stereo `recordings/<org>/<run>.wav`, left caller / right agent, as `recording_url`; the
 * caller-only and agent-only tracks `…/<run>/user.wav` and `…/<run>/bot.wav` as `user_recording_url` and
 * `bot_recording_url`) and `logs.voice` (per-turn response times, answering machine, media loss, warnings). The
 * call is then hung up; once its end has been reported (the call's end written on the run: calls/outcomes.ts) the run
 * session completes the run, once, with what the conversation produced (`pipeline_error` when the pipeline failed),
 * and the campaign attempt is settled in the same transaction.
 *
 * The call's time limit starts here (calls/time-limit.ts), counted from the answer.
 *
 * The agent's transfer_call tools hand the caller over with `AnsweredCall.transfer`: once the destination answered the
 * media leg is gone, the conversation ends (`call_transferred`) and the recordings stop there; the call goes on
 * between the caller and the destination, and the run completes when it ends.
 *
 * Answering-machine detection runs on outbound calls unless the agent's `voicemail_detection.enabled` is false;
 * `voicemail_detection.message` (template variables allowed) is left after the beep.
 *
 * The agent's turn settings (checked when saved, agents/schemas.ts): `user_turn_stop_timeout` is the turn detector's
 * stop window; `turn_start_strategy: min_words` lets caller speech interrupt only with `turn_start_min_words` words;
 * `turn_stop_strategy: turn_analyzer` (a Smart-Turn model we do not have) ends turns like `transcription`, with a
 * warning on the run. `noise_suppression: true` denoises the caller's audio (RNNoise) before the turn detector.
 */

const DEFAULT_TURN_START_MIN_WORDS = 3

export type VoiceConversationOptions = {
  /** What a call's end does to the campaign contact it dialled (campaigns/attempts.ts, wired by background.ts). */
  attempts: ContactAttempts
  /** Pipeline timings tests shorten. */
  pipeline?: Partial<
    Pick<VoicePipelineOptions, 'tickIntervalMs' | 'dtmfTimeoutMs' | 'mediaLossGraceMs' | 'drainTimeoutMs'>
  >
  /** Model server timeouts tests shorten. */
  modelTimeouts?: Partial<ModelTimeouts>
}

export const recordingKeysFor = (organizationId: number, runId: number) =>
  ({
    recording: `recordings/${organizationId}/${runId}.wav`,
    user_recording: `recordings/${organizationId}/${runId}/user.wav`,
    bot_recording: `recordings/${organizationId}/${runId}/bot.wav`,
  }) satisfies Partial<Record<RunArtifact, string>>

/** Where calls in progress keep their recording's settled audio (voice/recorder.ts): in `.partial`, never backed up. */
const recordingSpillDirOf = (dataDir: string) => join(dataDir, PARTIAL_DIR, 'call-recordings')

/** At start-up, before any call: the files of calls a crash cut short are left there, and nothing reads them again. */
export function removeRecordingSpills(dataDir: string): void {
  rmSync(recordingSpillDirOf(dataDir), { recursive: true, force: true })
}

export function createVoiceConversations(ctx: AppContext, options: VoiceConversationOptions): ConversationHooks {
  mkdirSync(recordingSpillDirOf(ctx.config.dataDir), { recursive: true, mode: 0o700 })
  return {
    async onAnswered(answered) {
      const limit = timeLimitOf(ctx, answered)
      const { call } = limit
      const log = ctx.log.child({ runId: call.runId, callId: call.callId })
      const warnings: string[] = []
      const warn = (message: string) => {
        warnings.push(message)
        log.warn({ warning: message }, 'voice call problem')
      }
      const voiceCall: VoiceCall = { call, log, warnings, warn, pipeline: null, failures: null! }
      voiceCall.failures = modelFailureHandling(call, warn, (reason) => voiceCall.pipeline?.stop(reason))
      let session: RunSession
      try {
        session = await openRunSession(ctx, call.runId, {
          channel: 'voice',
          onEvent: (event) => {
            voiceCall.pipeline?.conversationEvent(event)
            if (event.type === 'agent_turn_done' && event.text)
              call.onTranscript?.({ role: 'agent', text: event.text, interrupted: event.interrupted })
          },
          ...(call.transfer ? { transferCall: (request, signal) => call.transfer!(request, signal) } : {}),
          onModelFailure: voiceCall.failures.onFailure,
          modelTimeouts: options.modelTimeouts,
          onCompleted: (ctx, runId) => settleReportedAttempt(ctx, options.attempts, runId),
        })
      } catch (error) {
        if (!(error instanceof RunSessionError)) throw error
        // The session completed the run with the reason; the call is hung up when this returns. An agent whose models
        // cannot run tells the caller so first.
        if (error.configurations) {
          await speakBuiltinLine(call.media, unavailableCallOf(error.configurations).message, (failure) =>
            log.error({ err: failure }, 'unavailable line not said'),
          )
        }
        return {}
      }
      limit.start(session.configurations.max_call_duration_seconds, () => {
        void voiceCall.pipeline?.stop('call_duration_exceeded')
      })
      const finishAfterReport = (reason: EndReason) =>
        void call.reported
          .then(() => session.finish(reason))
          .catch((error) => log.error({ err: error }, 'run not completed after the call'))
      try {
        const result = await converse(ctx, voiceCall, session, {
          ...options,
          vad: loadVadEngine,
          noise: loadNoiseEngine,
        })
        finishAfterReport(result.endReason)
        return { voicemail: result.voicemail !== null, mediaLost: result.mediaLost !== null }
      } catch (error) {
        // The call is hung up when this throws; once its end is reported the run is completed with the error.
        finishAfterReport('pipeline_error')
        throw error
      }
    },
  }
}

/** The speech chain's models: speech to text, the voice (built-in when it fails), turn and answering-machine settings. */
async function speechModels(
  ctx: AppContext,
  session: RunSession,
  call: AnsweredCall,
  warn: (message: string) => void,
  noteTtsFailure: (failure: ModelFailure) => void,
  engines: { vad: () => Promise<VadEngine>; noise: () => Promise<NoiseEngine> },
) {
  const stt = session.clients.stt!
  const tts = ttsWithBuiltinFallback(session.clients.tts!, (failure) => {
    session.noteModelFailure(failure)
    noteTtsFailure(failure)
  })
  return {
    stt,
    tts,
    vad: await engines.vad(),
    noise: session.configurations.noise_suppression === true ? await engines.noise() : null,
    voicemail: call.direction === 'outbound' ? voicemailOptions(ctx, call, session) : null,
    ...turnOptions(session.configurations, warn),
    onSttAudio: (seconds: number) => session.reportSttSeconds(stt.ref, seconds),
    onTtsText: (characters: number) => session.reportTtsCharacters(tts.ref, characters),
  }
}

/**
 * A call on the realtime model: its failures outside a reply end the call as an LLM failure does; what the agent asks
 * for that this mode cannot do is a warning on the run (docs/models.md).
 */
function realtimeModels(
  session: RunSession,
  call: AnsweredCall,
  warn: (message: string) => void,
  onFailure: (failure: ModelFailure) => Promise<void>,
): { realtime: RealtimeVoiceOptions } {
  const realtime = session.clients.realtime!
  for (const message of realtimeLimits(session.configurations, call)) warn(message)
  return {
    realtime: {
      session: realtime,
      onUsage: (usage) => session.reportLlmTokens(realtime.ref, usage),
      onFailure(error) {
        const failure = modelFailureOf('llm', error)
        session.noteModelFailure(failure)
        void onFailure(failure)
      },
    },
  }
}

/** What the agent's settings ask for that a realtime model call does not do. */
function realtimeLimits(configurations: RunSession['configurations'], call: AnsweredCall): string[] {
  const limits: string[] = []
  const detection = isPlainObject(configurations.voicemail_detection) ? configurations.voicemail_detection : {}
  if (call.direction === 'outbound' && detection.enabled !== false)
    limits.push('Answering-machine detection is off on a realtime model: the model answers whoever picks up')
  if (configurations.turn_start_strategy === 'min_words' || configurations.turn_stop_strategy !== undefined)
    limits.push("The agent's turn settings do not apply on a realtime model: the model's turn detection decides")
  if (typeof configurations.user_turn_stop_timeout === 'number')
    limits.push("user_turn_stop_timeout does not apply on a realtime model: set the realtime section's turn_detection")
  return limits
}

/** One answered call's conversation as it goes: its log, its warnings, its pipeline once built. */
type VoiceCall = {
  call: AnsweredCall
  log: AppContext['log']
  warnings: string[]
  warn: (message: string) => void
  pipeline: VoicePipeline | null
  failures: ReturnType<typeof modelFailureHandling>
}

/** The voice pipeline over the call's media driving the session's conversation, until it is over; its results stored. */
async function converse(
  ctx: AppContext,
  voiceCall: VoiceCall,
  session: RunSession,
  options: Omit<VoiceConversationOptions, 'attempts'> & {
    vad: () => Promise<VadEngine>
    noise: () => Promise<NoiseEngine>
  },
): Promise<VoiceCallResult> {
  const { call, log, warnings, warn, failures } = voiceCall
  failures.useLine(modelFailureLineOf(session.configurations))
  const voice = createVoicePipeline({
    transport: call.media,
    clock: ctx.clock,
    recordings: session.recordings,
    retrievalMsTotal: session.retrievalMsTotal,
    ...(session.clients.realtime
      ? realtimeModels(session, call, warn, failures.onFailure)
      : await speechModels(ctx, session, call, warn, failures.noteTtsFailure, options)),
    onWarning: warn,
    recordingSpillPath: join(recordingSpillDirOf(ctx.config.dataDir), `${call.runId}.pcm`),
    ...options.pipeline,
  })
  voiceCall.pipeline = voice
  call.onDtmf((digit) => voice.dtmf(digit))
  void call.ended.then(() => voice.stop('user_hangup'))

  const result = await voice.run(transcribedTo(session.conversation, call.onTranscript))
  await storeRecordings(ctx, call, result.recording).catch((error) => {
    log.error({ err: error }, 'call recording not stored')
    warnings.push('The call recording could not be stored')
  })
  updateRun(ctx, call.runId, { logs: { voice: { ...voiceLog(result, warnings), ...failures.logEntry() } } })
  return result
}

/** The conversation, telling `listener` each caller turn as the pipeline gives it (agent lines come as events). */
function transcribedTo(conversation: Conversation, listener: AnsweredCall['onTranscript']): Conversation {
  if (!listener) return conversation
  const told: Conversation = Object.create(conversation)
  told.userMessage = (text, timing) => {
    listener({ role: 'user', text })
    return conversation.userMessage(text, timing)
  }
  return told
}

/** How long a transfer to the agent's `model_failure.transfer_to` may ring. */
const MODEL_FAILURE_TRANSFER_TIMEOUT_SECONDS = 30

/**
 * What a call does when a model fails mid-call (after `llm_fallback`): the first LLM or STT failure flushes what the
 * agent was saying, says the agent's `model_failure.message` in the built-in voice, then transfers the call to
 * `model_failure.transfer_to` when there is one (and the call can be transferred), else ends it with `model_error`.
 * A TTS failure does not end the call: the built-in voice speaks from then on (voice/fallback.ts). Every failure is
 * in `logs.voice.model_failures` (service, kind, message).
 */
function modelFailureHandling(
  call: AnsweredCall,
  warn: (message: string) => void,
  stop: (reason: EndReason) => unknown,
) {
  const failures: ModelFailure[] = []
  let line: ModelFailureLine = modelFailureLineOf({})
  let handled = false
  const note = (failure: ModelFailure) => {
    failures.push(failure)
    warn(`The ${SERVICE_NAMES[failure.service]} failed (${failure.kind}): ${failure.message}`)
  }
  return {
    useLine(agentLine: ModelFailureLine) {
      line = agentLine
    },
    noteTtsFailure: note,
    async onFailure(failure: ModelFailure): Promise<void> {
      note(failure)
      if (handled) return
      handled = true
      call.media.flush()
      await speakBuiltinLine(call.media, line.message, (error) =>
        warn(`The built-in voice failed: ${(error as Error).message}`),
      )
      let transferred = false
      if (line.transferTo && call.transfer && !call.media.closed) {
        const outcome = await call.transfer({
          destination: line.transferTo,
          timeoutSeconds: MODEL_FAILURE_TRANSFER_TIMEOUT_SECONDS,
        })
        transferred = outcome.status === 'transferred'
        if (!transferred)
          warn(
            `The transfer to model_failure.transfer_to failed: ${outcome.status === 'failed' ? outcome.message : outcome.status}`,
          )
      }
      // Not awaited: ending the conversation waits for the request this failure holds.
      void stop(transferred ? 'call_transferred' : 'model_error')
    },
    logEntry: () => (failures.length > 0 ? { model_failures: failures } : {}),
  }
}

function voicemailOptions(ctx: AppContext, call: AnsweredCall, session: RunSession): VoicemailOptions | null {
  const settings = isPlainObject(session.configurations.voicemail_detection)
    ? session.configurations.voicemail_detection
    : {}
  if (settings.enabled === false) return null
  if (typeof settings.message !== 'string' || settings.message.trim() === '') return {}
  const variables = getRun(ctx, call.organizationId, call.runId)?.initialContext ?? {}
  return { message: renderTemplate(settings.message, variables, new Date(ctx.clock.now())) }
}

/** Turn settings of an agent saved before they were checked may be anything: those out of shape are ignored. */
function turnOptions(
  configurations: RunSession['configurations'],
  warn: (message: string) => void,
): Pick<VoicePipelineOptions, 'turn' | 'bargeInMinWords'> {
  const options: Pick<VoicePipelineOptions, 'turn' | 'bargeInMinWords'> = {}
  const { user_turn_stop_timeout: stopSeconds, turn_start_min_words: minWords } = configurations
  if (typeof stopSeconds === 'number' && stopSeconds > 0) options.turn = { stopMs: stopSeconds * 1000 }
  if (configurations.turn_start_strategy === 'min_words') {
    options.bargeInMinWords =
      Number.isInteger(minWords) && (minWords as number) > 0 ? (minWords as number) : DEFAULT_TURN_START_MIN_WORDS
  }
  if (configurations.turn_stop_strategy === 'turn_analyzer') {
    warn(
      'turn_stop_strategy "turn_analyzer" needs a Smart-Turn model Ringbase does not have: turns ended as with "transcription"',
    )
  }
  return options
}

async function storeRecordings(ctx: AppContext, call: AnsweredCall, recording: CallRecording): Promise<void> {
  try {
    if (recording.durationMs === 0) return
    const keys = recordingKeysFor(call.organizationId, call.runId)
    const wavs = { recording: recording.stereo, user_recording: recording.caller, bot_recording: recording.agent }
    for (const artifact of ['recording', 'user_recording', 'bot_recording'] as const) {
      await ctx.objects.put(keys[artifact], wavs[artifact]())
      attachArtifact(ctx, call.runId, artifact, keys[artifact])
    }
  } finally {
    await recording.discard()
  }
}

function voiceLog(result: VoiceCallResult, warnings: string[]): Record<string, unknown> {
  return {
    end_reason: result.endReason,
    recording_seconds: Math.round(result.recording.durationMs) / 1000,
    ...(result.firstAnswerHeldMs === null ? {} : { first_answer_held_ms: Math.round(result.firstAnswerHeldMs) }),
    turns: result.turns.map((turn) => ({
      stop_window_ms: Math.round(turn.stopWindowMs),
      response_ms: Math.round(turn.responseMs),
      stt_ms: Math.round(turn.sttMs),
      speculation_saved_ms: Math.round(turn.speculationSavedMs),
      first_text_ms: turn.firstTextMs === null ? null : Math.round(turn.firstTextMs),
      first_sentence_ms: turn.firstSentenceMs === null ? null : Math.round(turn.firstSentenceMs),
      first_audio_ms: turn.firstAudioMs === null ? null : Math.round(turn.firstAudioMs),
      tts_lead_ms: Math.round(turn.ttsLeadMs),
      ...(turn.retrievalMs > 0 ? { retrieval_ms: Math.round(turn.retrievalMs * 10) / 10 } : {}),
      engine_ms: Math.round(engineShareMs(turn)),
    })),
    speculation: {
      transcribed: result.speculation.transcribed,
      llm_requests_prepared: result.speculation.prepared,
      llm_requests_dropped: result.speculation.dropped,
      turns_ended_early: result.speculation.endedEarly,
    },
    ...(result.voicemail
      ? {
          voicemail: {
            detected_after_ms: Math.round(result.voicemail.detectedAfterMs),
            message_left: result.voicemail.messageLeft,
          },
        }
      : {}),
    ...(result.mediaLost ? { media_lost: { code: result.mediaLost.code, reason: result.mediaLost.reason } } : {}),
    warnings,
  }
}
