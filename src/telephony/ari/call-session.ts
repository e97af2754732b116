import type { Clock } from '../../lib/clock'
import type { Logger } from '../../log'
import { AddressError, buildAriDialString, DEFAULT_DIAL_STRING_TEMPLATE, type DestinationRules } from '../../lib/phone'
import { connectAriMedia } from '../../voice/ari-media'
import type { MediaTransport } from '../../voice/media-transport'
import { AriError, type AriRest } from './rest'
import { transferOverAri, type AriTransferResult, type ChannelWatch } from './transfer'
import type { AriEvent } from './types'
import { within } from '../../lib/within'

/**
 * What happens to an answered ARI call (outbound or inbound) until it is over, and the seam where the conversation
 * engine attaches.
 *
 * On answer the call's channel is put in a mixing bridge (`ringbase-<callId>`). When a conversation is attached
 * (`ctx.telephony.onAnswered`, handed here as `ConversationHooks`), a media leg joins the bridge: `externalMedia` over
 * Asterisk's WebSocket channel driver in server mode (`transport=websocket`, `connection_type=server`,
 * `encapsulation=none`, `format=ulaw`, JSON control messages with `transport_data=f(json)`); Ringbase connects to `<ari_endpoint>/media/<MEDIA_WEBSOCKET_CONNECTION_ID>`
 * (subprotocol `media`; the random connection id is what admits it), waits for the media channel to enter the app
 * (it does once the socket is open) and adds it to the bridge. The engine then gets an `AnsweredCall` and runs the
 * conversation over it. Ringbase records the call itself from that audio, so the bridge is not recorded.
 *
 * A media leg that cannot be set up hangs the call up (the caller would hear silence) and the report says
 * `media_failed`. The agent's `max_call_duration_seconds` is enforced where the call gets its conversation
 * (calls/time-limit.ts), through `hangup`.
 *
 * `transfer` hands the caller to another destination by bridge swap (ari/transfer.ts): when the destination answers
 * it joins the caller's bridge and the media leg is hung up, which ends the engine's conversation (and Ringbase's
 * recording: the transferred part is not recorded). The call then stays up until the caller or the destination hangs
 * up, which hangs the other up too.
 *
 * After hangup, `finish` tells the engine the call is gone, waits (bounded) for it to store its results, hangs up
 * the media leg, destroys the bridge, and returns what the engine concluded for the call's report.
 */

export type AnsweredCall = {
  callId: string
  runId: number
  organizationId: number
  /** The telephony configuration; null for a web call (no telephone line). */
  configurationId: number | null
  direction: 'outbound' | 'inbound'
  /** The caller's audio in, the agent's audio out (8 kHz µ-law), already in the call's bridge. */
  media: MediaTransport
  /** Keys the caller presses (ChannelDtmfReceived on the call's channel). */
  onDtmf(listener: (digit: string) => void): void
  /** Resolves once the call's channel is gone, whoever hung up. */
  readonly ended: Promise<void>
  /**
   * Resolves once the call's end has been reported (its run completed with the call's outcome, a campaign contact
   * settled): what the conversation produced is written over it after that.
   */
  readonly reported: Promise<void>
  /** Hangs the call up; its outcome is reported like any other hangup, with `providerStatus` when given. */
  hangup(providerStatus?: string): Promise<void>
  /**
   * Rings `destination` (dialled through the configuration's dial string template and destination rules) for up to
   * `timeoutSeconds` with a ring tone for the caller; on answer connects it to the caller and releases the media leg.
   * Resolves to the outcome; never throws. One transfer at a time. Absent on calls that cannot be transferred (carriers
   * without a transfer API): transfer_call tools are not offered on them.
   */
  transfer?(request: { destination: string; timeoutSeconds: number }, signal?: AbortSignal): Promise<CallTransferResult>
  /** Hears each line of the transcript as it is made (a web call shows it live on the caller's page). */
  onTranscript?(line: TranscriptLine): void
}

/** A finished line of the conversation: what the caller said, or what the agent said (`interrupted`: cut by a barge-in). */
export type TranscriptLine = { role: 'user' | 'agent'; text: string; interrupted?: boolean }

/** How a transfer went, on any provider (`channelId`: the destination's channel, on Asterisk). */
export type CallTransferResult =
  | { status: 'transferred'; channelId?: string }
  | Extract<AriTransferResult, { status: 'failed' }>

/** What the engine learnt about the call, for its report. */
export type ConversationOutcome = {
  /** An answering machine took the call. */
  voicemail?: boolean
  /** The media leg closed while the call was up. */
  mediaLost?: boolean
}

export type ConversationHooks = {
  /** Runs the call's conversation; resolves once it is over and its results are stored. A throw is logged. */
  onAnswered(call: AnsweredCall): Promise<ConversationOutcome | void>
}

/** A call's run, as the session needs it. */
export type SessionCall = {
  callId: string
  runId: number
  organizationId: number
  configurationId: number
  direction: 'outbound' | 'inbound'
}

export type CallSessionOptions = {
  /** Not AppContext: provider.ts (which AppContext imports) imports this file's types. */
  ctx: { log: Logger; clock: Clock }
  rest: AriRest
  /** The configuration's `ari_endpoint`: the media socket is on the same server. */
  ariEndpoint: string
  call: SessionCall
  conversation?: ConversationHooks
  /** How long the media leg may take to come up (externalMedia, socket, entering the app). */
  mediaTimeoutMs?: number
  /** The configuration's `dial_string_template`, for transfer destinations (default PJSIP/{number}). */
  dialStringTemplate?: string
  /** The configuration's rules for transfer destinations (raw dial strings only when allowed). */
  destinationRules?: DestinationRules
  /** Events of channels other than the call's own (a transfer destination); transfers fail without it. */
  watchChannel?: ChannelWatch
  /** After a transfer connected: the call outlives the agent's part (the watchdog gives it longer). */
  onTransferred?: () => void
}

/** Where the caller went, and since when (ctx.clock ms). */
export type CallTransfer = { destination: string; connectedAt: number }

export type SessionEnd = { outcome?: 'voicemail'; providerStatus?: string }

export type CallSession = {
  /** Set once a transfer connected the caller to its destination. */
  readonly transfer: CallTransfer | null
  /** Our id for the media leg's channel, fixed before it is created: the adapter routes its events here. */
  readonly mediaChannelId: string
  /** An event about the media channel. */
  mediaEvent(event: AriEvent): void
  /** A DTMF key pressed on the call's channel. */
  dtmf(digit: string): void
  /** After the call's channel is gone: lets the engine finish, tears down; resolves to what the report should say. */
  finish(): Promise<SessionEnd>
  /** The call's end was reported. */
  reported(): void
}

/** How long finish() lets the engine store its results (recordings, transcript) after the hangup. */
const CONVERSATION_FINISH_TIMEOUT_MS = 15_000
const DEFAULT_MEDIA_TIMEOUT_MS = 10_000

const NAME_PREFIX = 'ringbase-'
const MEDIA_SUFFIX = '-media'
export const bridgeIdFor = (callId: string) => `${NAME_PREFIX}${callId}`
/** The call a bridge belongs to ('' for bridges that are not ours). */
export const callIdOfBridge = (bridgeId: string) =>
  bridgeId.startsWith(NAME_PREFIX) ? bridgeId.slice(NAME_PREFIX.length) : ''
export const mediaChannelIdFor = (callId: string) => `${callId}${MEDIA_SUFFIX}`
/** The call a media leg's channel id would belong to ('' when the id has not that shape). */
export const callIdOfMediaChannel = (channelId: string) =>
  channelId.endsWith(MEDIA_SUFFIX) ? channelId.slice(0, -MEDIA_SUFFIX.length) : ''

class MediaLegError extends Error {}

/** The media leg's externalMedia parameters: chan_websocket in server mode, µ-law both ways, JSON control messages. */
export const MEDIA_LEG = {
  format: 'ulaw',
  transport: 'websocket',
  connectionType: 'server',
  encapsulation: 'none',
  direction: 'both',
  transportData: 'f(json)',
} as const

/** One answered call's session as it goes: what exists at Asterisk, the media leg, a transfer, the conversation. */
type Session = {
  options: CallSessionOptions
  logContext: { callId: string; runId: number; configurationId: number }
  bridgeId: string
  mediaChannelId: string
  dtmfListeners: ((digit: string) => void)[]
  bridgeCreated: boolean
  mediaCreated: boolean
  mediaFailed: boolean
  transport: MediaTransport | null
  finished: boolean
  /** What the conversation's hangup asked the report to say (the time limit's `max_call_duration`). */
  hangupStatus: string | null
  transfer: CallTransfer | null
  transferredChannelId: string | null
  transferring: AbortController | null
  unwatchTransferred: () => void
  conversationDone: Promise<ConversationOutcome | void> | null
  ended: PromiseWithResolvers<void>
  reported: PromiseWithResolvers<void>
  mediaInApp: PromiseWithResolvers<void>
}

/** Starts the session of a call that has just been answered in Stasis. Never throws: failures are logged. */
export function startCallSession(options: CallSessionOptions): CallSession {
  const { call } = options
  const session: Session = {
    options,
    logContext: { callId: call.callId, runId: call.runId, configurationId: call.configurationId },
    bridgeId: bridgeIdFor(call.callId),
    mediaChannelId: mediaChannelIdFor(call.callId),
    dtmfListeners: [],
    bridgeCreated: false,
    mediaCreated: false,
    mediaFailed: false,
    transport: null,
    finished: false,
    hangupStatus: null,
    transfer: null,
    transferredChannelId: null,
    transferring: null,
    unwatchTransferred: () => {},
    conversationDone: null,
    ended: Promise.withResolvers<void>(),
    reported: Promise.withResolvers<void>(),
    mediaInApp: Promise.withResolvers<void>(),
  }
  const setup = setUp(session)
  void setup.then((media) => {
    if (media && options.conversation) startConversation(session, options.conversation, media)
  })

  return {
    get transfer() {
      return session.transfer
    },
    mediaChannelId: session.mediaChannelId,
    mediaEvent(event) {
      if (event.type === 'StasisStart') session.mediaInApp.resolve()
    },
    dtmf(digit) {
      for (const listener of session.dtmfListeners) listener(digit)
    },
    reported: () => session.reported.resolve(),
    finish: () => finishSession(session, setup),
  }
}

const hangupCall = (session: Session) => hangupIgnoringGone(session.options.rest, session.options.call.callId)

/** Hands the call to the conversation; once it is over a call still up is hung up, unless it was transferred. */
function startConversation(session: Session, conversation: ConversationHooks, media: MediaTransport) {
  const { ctx, call } = session.options
  const { logContext } = session
  session.conversationDone = conversation
    .onAnswered({
      ...call,
      media,
      ended: session.ended.promise,
      reported: session.reported.promise,
      hangup: (providerStatus) => {
        if (providerStatus && !session.finished) session.hangupStatus ??= providerStatus
        return hangupCall(session)
      },
      transfer: (request, signal) => transferCall(session, request, signal),
      onDtmf: (listener) => {
        session.dtmfListeners.push(listener)
      },
    })
    .catch((error) => {
      ctx.log.error({ ...logContext, err: error }, 'the conversation engine failed')
    })
  void session.conversationDone.then(() => {
    if (!session.finished && !session.transfer)
      void hangupCall(session).catch((error) =>
        ctx.log.warn({ ...logContext, err: error }, 'hangup after the conversation failed'),
      )
  })
}

function withinMediaTimeout<T>(session: Session, step: Promise<T>, what: string): Promise<T> {
  const timeoutMs = session.options.mediaTimeoutMs ?? DEFAULT_MEDIA_TIMEOUT_MS
  return within(step, timeoutMs, () => {
    throw new MediaLegError(`${what} took longer than ${timeoutMs} ms`)
  })
}

async function attachMedia(session: Session): Promise<MediaTransport> {
  const { rest, ctx, ariEndpoint } = session.options
  const channel = await rest.externalMedia({ channelId: session.mediaChannelId, ...MEDIA_LEG })
  session.mediaCreated = true
  const connectionId = channel.channelvars?.MEDIA_WEBSOCKET_CONNECTION_ID
  if (!connectionId) {
    throw new MediaLegError(
      'externalMedia answered without MEDIA_WEBSOCKET_CONNECTION_ID: Asterisk needs chan_websocket (22.6+, 21.11+ or 20.16+)',
    )
  }
  const media = await withinMediaTimeout(
    session,
    connectAriMedia({ endpoint: ariEndpoint, connectionId, logger: ctx.log }),
    'connecting the media socket',
  )
  session.transport = media
  await withinMediaTimeout(session, session.mediaInApp.promise, 'the media channel entering the app')
  if (session.finished) return media
  await rest.addChannelToBridge(session.bridgeId, [session.mediaChannelId])
  return media
}

async function transferCall(
  session: Session,
  { destination, timeoutSeconds }: { destination: string; timeoutSeconds: number },
  signal?: AbortSignal,
): Promise<AriTransferResult> {
  const { options } = session
  const fail = (message: string): AriTransferResult => ({ status: 'failed', reason: 'failed', message })
  if (!options.watchChannel) return fail('This call cannot be transferred')
  if (session.transferring || session.transfer || session.finished)
    return fail('The call is already being transferred or has ended')
  let endpoint: string
  try {
    endpoint = buildAriDialString(
      destination,
      options.dialStringTemplate || DEFAULT_DIAL_STRING_TEMPLATE,
      options.destinationRules,
    )
  } catch (error) {
    if (error instanceof AddressError) return fail(error.message)
    throw error
  }
  session.transferring = new AbortController()
  const stop = session.transferring.signal
  try {
    const result = await transferOverAri({
      rest: options.rest,
      watch: options.watchChannel,
      bridgeId: session.bridgeId,
      agentChannelIds: session.mediaCreated ? [session.mediaChannelId] : [],
      endpoint,
      channelId: `${options.call.callId}-transfer`,
      timeoutSeconds,
      signal: signal ? AbortSignal.any([signal, stop]) : stop,
    })
    options.ctx.log.info(
      {
        ...session.logContext,
        outcome: result.status,
        reason: result.status === 'failed' ? result.reason : undefined,
      },
      'call transfer',
    )
    if (result.status === 'transferred') await transferred(session, destination, result.channelId)
    return result
  } finally {
    session.transferring = null
  }
}

/** The destination answered: the call is now between the caller and it; whoever hangs up first ends it for both. */
async function transferred(session: Session, destination: string, channelId: string) {
  const { options } = session
  options.onTransferred?.()
  session.transfer = { destination, connectedAt: options.ctx.clock.now() }
  session.transferredChannelId = channelId
  session.unwatchTransferred = options.watchChannel!(channelId, (event) => {
    if (event.type === 'ChannelDestroyed' && event.channel.id === channelId)
      void hangupCall(session).catch(() => undefined)
  })
  if (session.finished) await hangupIgnoringGone(options.rest, channelId).catch(() => undefined)
}

/** Each step checks `finished`: the far end may hang up while the call is being set up. */
async function setUp(session: Session): Promise<MediaTransport | null> {
  const { rest, ctx, conversation, call } = session.options
  try {
    await rest.createBridge({ bridgeId: session.bridgeId, name: session.bridgeId })
    session.bridgeCreated = true
    if (session.finished) return null
    await rest.addChannelToBridge(session.bridgeId, [call.callId])
    if (session.finished || !conversation) return null
    const media = await attachMedia(session)
    return session.finished ? null : media
  } catch (error) {
    if (session.finished) return null
    if (conversation) {
      session.mediaFailed = true
      ctx.log.error({ ...session.logContext, err: error }, 'the media leg could not be set up: hanging up')
      void hangupCall(session).catch(() => undefined)
    } else ctx.log.warn({ ...session.logContext, err: error }, 'call session setup failed')
    return null
  }
}

/** After hangup: lets the conversation finish (bounded), tears down, and says what the report should say. */
async function finishSession(session: Session, setup: Promise<MediaTransport | null>): Promise<SessionEnd> {
  const { rest, ctx } = session.options
  session.finished = true
  session.transferring?.abort()
  session.unwatchTransferred()
  session.ended.resolve()
  await setup
  const outcome = session.conversationDone
    ? await within(session.conversationDone, CONVERSATION_FINISH_TIMEOUT_MS, () => undefined)
    : undefined
  try {
    session.transport?.close()
    if (session.mediaCreated) await hangupIgnoringGone(rest, session.mediaChannelId)
    if (session.transferredChannelId) await hangupIgnoringGone(rest, session.transferredChannelId)
    if (session.bridgeCreated) await rest.destroyBridge(session.bridgeId).catch(ignoreGone)
  } catch (error) {
    ctx.log.warn({ ...session.logContext, err: error }, 'call session teardown failed')
  }
  if (session.mediaFailed) return { providerStatus: 'media_failed' }
  const providerStatus = session.hangupStatus ?? (outcome?.mediaLost ? 'media_lost' : null)
  return {
    ...(outcome?.voicemail ? { outcome: 'voicemail' as const } : {}),
    ...(providerStatus ? { providerStatus } : {}),
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
