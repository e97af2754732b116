import type { AppContext } from '../context'
import { AddressError, buildAriDialString, DEFAULT_DIAL_STRING_TEMPLATE, type DestinationRules } from '../lib/phone'
import { AriError, type AriRest } from './ari/rest'
import { transferOverAri, type AriTransferResult, type ChannelWatch } from './ari/transfer'

/**
 * What happens to an outbound call between answer and hangup, and the seam where the conversation engine attaches.
 *
 * On answer the call's channel is put in a mixing bridge (`ringbase-<callId>`) and the bridge is recorded. Then
 * `ConversationHooks.onAnswered` gets an `AnsweredCall`: the engine creates its media leg with
 * `attachExternalMedia` (chan_websocket towards the configuration's `ws_client_name`), which joins the bridge, so
 * the caller, the engine and the recording all share one mix. The agent's `max_call_duration_seconds` is a hard
 * stop: when it passes, the call is hung up whatever the engine is doing.
 *
 * `transfer` hands the caller to another destination by bridge swap (ari/transfer.ts); after it the destination and
 * the caller talk in the same bridge (still recorded, no longer bound by the agent's max call duration) until either
 * hangs up, which hangs the other up too.
 *
 * After hangup, `finish` tears the bridge and any media legs down, downloads the stored recording from Asterisk
 * into the object store (`recordings/<org>/<runId>.wav`) and returns its key, which the adapter puts in the call's
 * 'ended' report. Asterisk's copy is then deleted.
 */

export type AnsweredCall = {
  callId: string
  runId: number
  organizationId: number
  configurationId: number
  /** The mixing bridge the call's channel is in. */
  bridgeId: string
  /** websocket_client.conf connection name for chan_websocket external media; '' when the configuration has none. */
  externalMediaHost: string
  /**
   * Creates a chan_websocket external media channel (8 kHz µ-law, raw binary frames, Asterisk connects out to
   * `externalMediaHost`) and adds it to the bridge. `transportData` is appended to that connection's URI (Asterisk's
   * `v(key=value,…)` form). Returns the media channel id; it is hung up with the call.
   */
  attachExternalMedia(transportData?: string): Promise<string>
  /** Hangs the call up; its outcome is reported like any other hangup. */
  hangup(): Promise<void>
  /**
   * Rings `destination` (dialled through the configuration's dial string template) for up to `timeoutSeconds` with a
   * ring tone for the caller; on answer connects it to the caller and releases the media legs. Resolves to the outcome;
   * never throws. One transfer at a time.
   */
  transfer(request: { destination: string; timeoutSeconds: number }, signal?: AbortSignal): Promise<AriTransferResult>
}

export type ConversationHooks = {
  /** Called once per answered call, after the bridge is recording. A throw is logged; the call goes on. */
  onAnswered(call: AnsweredCall): void | Promise<void>
}

export type CallSessionOptions = {
  ctx: Pick<AppContext, 'log' | 'objects' | 'clock'>
  rest: AriRest
  call: { callId: string; runId: number; organizationId: number; configurationId: number }
  externalMediaHost: string
  maxCallDurationMs: number
  conversation?: ConversationHooks
  /** The configuration's `dial_string_template`, for transfer destinations (default PJSIP/{number}). */
  dialStringTemplate?: string
  /** The configuration's rule for raw dial strings in transfer destinations (refused without it). */
  destinationRules?: DestinationRules
  /** Events of channels other than the call's own (a transfer destination); transfers fail without it. */
  watchChannel?: ChannelWatch
  /** After a transfer connected: the agent's max call duration no longer applies, the caller's own limits do. */
  onTransferred?: () => void
}

/** Where the caller went, and since when (ctx.clock ms). */
export type CallTransfer = { destination: string; connectedAt: number }

export type CallSession = {
  /** True once the max call duration hung the call up. */
  readonly hardStopped: boolean
  /** Set once a transfer connected the caller to its destination. */
  readonly transfer: CallTransfer | null
  /** The adapter routes RecordingFinished / RecordingFailed of `recordingName(callId)` here. */
  recordingEnded(stored: boolean): void
  /** After the call's channel is gone: tears down, stores the recording; resolves to its object key, if any. */
  finish(): Promise<string | undefined>
}

/** How long finish() waits for Asterisk to close the recording file after the bridge is destroyed. */
const RECORDING_CLOSE_TIMEOUT_MS = 5_000

const NAME_PREFIX = 'ringbase-'
/** Bridge id and recording name of a call: both ours, both named after the call. */
const sessionNameFor = (callId: string) => `${NAME_PREFIX}${callId}`
/** The call a bridge or bridge recording belongs to ('' for names that are not ours). */
export const callIdOfSessionName = (name: string) => (name.startsWith(NAME_PREFIX) ? name.slice(NAME_PREFIX.length) : '')
const mediaChannelIdFor = (callId: string, index: number) => `${callId}-media-${index}`
/** The call an external media channel id would belong to ('' when the id has not that shape). */
export const callIdOfMediaChannel = (channelId: string) => channelId.match(/^(.+)-media-\d+$/)?.[1] ?? ''
export const recordingKeyFor = (organizationId: number, runId: number) => `recordings/${organizationId}/${runId}.wav`

/** Starts the session of a call that has just entered Stasis answered. Never throws: failures are logged. */
export function startCallSession(options: CallSessionOptions): CallSession {
  const { ctx, rest, call } = options
  const logContext = { callId: call.callId, runId: call.runId, configurationId: call.configurationId }
  const bridgeId = sessionNameFor(call.callId)
  const recordingName = sessionNameFor(call.callId)
  const mediaChannelIds: string[] = []
  let bridgeCreated = false
  let recordingStarted = false
  /** Set by RecordingFinished / RecordingFailed, which may come before or after finish() starts waiting. */
  let recordingStored: boolean | undefined
  let onRecordingEnded: ((stored: boolean) => void) | undefined
  let finished = false
  let hardStopped = false
  let transfer: CallTransfer | null = null
  let transferredChannelId: string | null = null
  let transferring: AbortController | null = null
  let unwatchTransferred = () => {}

  const hardStop = setTimeout(() => {
    hardStopped = true
    ctx.log.info({ ...logContext, maxCallDurationMs: options.maxCallDurationMs }, 'max call duration reached: hanging up')
    void answeredCall.hangup().catch((error) => ctx.log.warn({ ...logContext, err: error }, 'hard stop hangup failed'))
  }, options.maxCallDurationMs)

  const answeredCall: AnsweredCall = {
    ...call,
    bridgeId,
    externalMediaHost: options.externalMediaHost,
    async attachExternalMedia(transportData) {
      const channelId = mediaChannelIdFor(call.callId, mediaChannelIds.length + 1)
      mediaChannelIds.push(channelId)
      await rest.externalMedia({
        channelId, externalHost: options.externalMediaHost, format: 'ulaw', transport: 'websocket', encapsulation: 'none',
        connectionType: 'client', direction: 'both', transportData,
      })
      await rest.addChannelToBridge(bridgeId, [channelId])
      return channelId
    },
    hangup: () => hangupIgnoringGone(rest, call.callId),
    async transfer({ destination, timeoutSeconds }, signal) {
      const fail = (message: string): AriTransferResult => ({ status: 'failed', reason: 'failed', message })
      if (!options.watchChannel) return fail('This call cannot be transferred')
      if (transferring || transfer || finished) return fail('The call is already being transferred or has ended')
      let endpoint: string
      try {
        endpoint = buildAriDialString(destination, options.dialStringTemplate || DEFAULT_DIAL_STRING_TEMPLATE, options.destinationRules)
      } catch (error) {
        if (error instanceof AddressError) return fail(error.message)
        throw error
      }
      transferring = new AbortController()
      const stop = transferring.signal
      try {
        const result = await transferOverAri({
          rest, watch: options.watchChannel, bridgeId, agentChannelIds: [...mediaChannelIds], endpoint,
          channelId: `${call.callId}-transfer`, timeoutSeconds, signal: signal ? AbortSignal.any([signal, stop]) : stop,
        })
        ctx.log.info({ ...logContext, outcome: result.status, reason: result.status === 'failed' ? result.reason : undefined }, 'call transfer')
        if (result.status === 'transferred') {
          clearTimeout(hardStop)
          options.onTransferred?.()
          transfer = { destination, connectedAt: ctx.clock.now() }
          transferredChannelId = result.channelId
          // Whoever hangs up first ends the call for both.
          unwatchTransferred = options.watchChannel(result.channelId, (event) => {
            if (event.type === 'ChannelDestroyed' && event.channel.id === result.channelId) void answeredCall.hangup().catch(() => undefined)
          })
          if (finished) await hangupIgnoringGone(rest, result.channelId).catch(() => undefined)
        }
        return result
      } finally {
        transferring = null
      }
    },
  }

  /** Each step checks `finished`: the far end may hang up while the bridge is being set up. */
  async function setUp(): Promise<boolean> {
    try {
      await rest.createBridge({ bridgeId, name: bridgeId })
      bridgeCreated = true
      if (finished) return false
      await rest.addChannelToBridge(bridgeId, [call.callId])
      if (finished) return false
      await rest.recordBridge(bridgeId, { name: recordingName, format: 'wav', ifExists: 'overwrite' })
      recordingStarted = true
      return !finished
    } catch (error) {
      if (!finished) ctx.log.warn({ ...logContext, err: error }, 'call session setup failed')
      return false
    }
  }
  const setup = setUp()
  // Not awaited by finish(): an engine may keep its hook running for the whole conversation.
  void setup.then(async (ready) => {
    if (ready && options.conversation) await options.conversation.onAnswered(answeredCall)
  }).catch((error) => ctx.log.error({ ...logContext, err: error }, 'conversation engine failed on answer'))

  async function storeRecording(): Promise<string | undefined> {
    if (!recordingStarted) return undefined
    const closed = new Promise<boolean>((resolve) => { onRecordingEnded = resolve })
    const stored = recordingStored ?? await settledWithin(closed, RECORDING_CLOSE_TIMEOUT_MS, true)
    if (!stored) return undefined
    const key = recordingKeyFor(call.organizationId, call.runId)
    await ctx.objects.put(key, await rest.getStoredRecordingFile(recordingName))
    // Asterisk's copy is no longer needed; the run does not wait for its deletion.
    void rest.deleteStoredRecording(recordingName).catch((error) =>
      ctx.log.warn({ ...logContext, err: error }, 'could not delete the recording from Asterisk'))
    return key
  }

  return {
    get hardStopped() { return hardStopped },
    get transfer() { return transfer },
    recordingEnded(stored) {
      recordingStored = stored
      onRecordingEnded?.(stored)
    },
    async finish() {
      finished = true
      clearTimeout(hardStop)
      transferring?.abort()
      unwatchTransferred()
      await setup
      try {
        await Promise.all([...mediaChannelIds, ...(transferredChannelId ? [transferredChannelId] : [])].map((id) => hangupIgnoringGone(rest, id)))
        // Destroying the bridge is what makes Asterisk close the recording file.
        if (bridgeCreated) await rest.destroyBridge(bridgeId).catch(ignoreGone)
        return await storeRecording()
      } catch (error) {
        ctx.log.warn({ ...logContext, err: error }, 'call session teardown failed; the recording may be missing')
        return undefined
      }
    },
  }
}

/** The promise's value, or `fallback` when it takes longer than `ms`. */
async function settledWithin<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<T>((resolve) => { timer = setTimeout(() => resolve(fallback), ms) })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** For deletions: a 404 means it is already gone, which is what we wanted. */
export function ignoreGone(error: unknown): void {
  if (!(error instanceof AriError && error.status === 404)) throw error
}

/** DELETE /channels/{id}; a channel that is already gone is what we wanted. */
export async function hangupIgnoringGone(rest: AriRest, channelId: string): Promise<void> {
  await rest.hangup(channelId).catch(ignoreGone)
}
