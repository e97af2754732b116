import type { AppContext } from '../../context'
import { AddressError, ARI_PROVIDER, buildAriDialString, DEFAULT_DIAL_STRING_TEMPLATE } from '../../lib/phone'
import { hangupIgnoringGone, startCallSession, type CallSession } from './call-session'
import {
  DialError,
  type CallOutcome,
  type CallOwnership,
  type CallReport,
  type CallRun,
  type CallState,
  type DialRequest,
  type InboundRoute,
  type TelephonyProvider,
} from '../provider'
import { ariDestinationRules } from './metadata'
import { removeAriLeftovers } from './leftovers'
import { AriError, type AriRest } from './rest'
import { TRANSFER_APP_ARG } from './transfer'
import { eventChannel, type AriEvent, type Channel, type DialStatus, type StasisStart } from './types'

/**
 * The ARI telephony provider: places calls into the configuration's Stasis app with our own channel id, follows
 * each call's events and reports exactly one outcome per call through `ctx.telephony.report`.
 *
 * Events are correlated by channel id only. The call is tracked before the originate request goes out, because
 * Asterisk's events often overtake its response; the media leg's channel id is known before it is created too.
 * Channels a session watches (a transfer's destination) go to that session. Other channels are ignored (the `;2` half
 * of a Local channel, anything a misconfigured Asterisk sends), except one entering our Stasis app that we did not
 * create: an inbound call, routed by `inbound` (no route: hung up), answered and tracked like ours. Inbound channels
 * leave the app with StasisEnd and no ChannelDestroyed (trace inbound_stasis_answer_hangup): that ends them.
 *
 * Subscriptions (the websocket registers the app without subscribeAll): every channel Ringbase follows is one Asterisk
 * subscribes the app to by itself, as the recorded traces show: a channel originated with `app=` (calls, transfer
 * destinations) and, for Local channels, its `;2` half, from the originate until destroyed, ringing included
 * (busy_486, ws_disconnect_reconnect's GET /applications); the externalMedia leg likewise; an inbound channel while
 * it is in our app. These survive a reconnect of the same app (ws_disconnect_reconnect). After every (re)connect the
 * open calls' live channels are subscribed again explicitly (`POST /applications/{app}/subscription`), for when the
 * app is not the one they were placed with (its name changed with the configuration) or Asterisk dropped them.
 *
 * Outcome (README facts from the recorded traces):
 * - answered (StasisStart, or the channel reaching Up) and later destroyed → completed;
 * - never answered: the originated channel's ChannelDestroyed cause decides when it is specific
 *   (17 busy; 18, 19 no answer; any other Q.850 cause failed); busy and congestion destroy it with cause 0, so then
 *   the last Dial `dialstatus` decides (BUSY busy, NOANSWER no answer, CONGESTION / CHANUNAVAIL / others failed);
 * - channel gone without a ChannelDestroyed we saw (missed while disconnected) → failed, providerStatus 'vanished';
 * - still open long after it should have ended (no way to check) → failed, providerStatus 'expired'.
 */

/** What the adapter needs from the connection manager about one configuration's live connection. */
export type AriLink = {
  rest: AriRest
  /** Whether the events websocket is up; a call placed without it would have no outcome events. */
  readonly connected: boolean
  /** The configuration's ARI endpoint: the media sockets are on the same server. */
  endpoint: string
  /** The Stasis app the events websocket registered. */
  app: string
}

/** A call arriving in our Stasis app, as the dialplan sent it. */
export type InboundCall = { configurationId: number; callId: string; callerNumber: string; calledNumber: string }

export type AriAdapterOptions = {
  /** The live connection of a configuration; undefined when none runs (inactive, deleted, not ARI). */
  link(configurationId: number): AriLink | undefined
  /** A REST client for any stored ARI configuration (the live one's, else one from stored credentials); null when none. */
  restFor(configurationId: number): AriRest | null
  /** How long a call missing from GET /channels may still have its ChannelDestroyed in flight. */
  vanishGraceMs?: number
  /** The configurations whose Asterisk `removeLeftovers` cleans (none when absent). */
  configurationIds?(): number[]
}

export type AriAdapter = TelephonyProvider & {
  /** Feeds one event received on a configuration's websocket. Never throws, never waits on I/O. */
  handleEvent(configurationId: number, event: AriEvent): void
  /**
   * Ends the configuration's calls whose channels are gone, notices answers that were missed. After a (re)connect
   * (`resubscribe`), first subscribes the app again to the open calls' live channels.
   */
  reconcile(configurationId: number, options?: { resubscribe?: boolean }): Promise<void>
  /** The watchdog's pass: reconciles every configuration with open calls and expires calls past their deadline. */
  sweep(): Promise<void>
  /** Calls placed and not yet reported ended. */
  openCallCount(): number
}

type TrackedCall = {
  callId: string
  configurationId: number
  /** Absent for a call adopted after a restart (see callState): no session is started for it. */
  run?: CallRun
  /** Entered our app from the dialplan; it ends with StasisEnd. */
  inbound: boolean
  /** The cause of the last hangup request (inbound calls have no ChannelDestroyed to take it from). */
  hangupCause?: number
  /** The originate request was answered 200 (an adopted call counts as placed). */
  placed: boolean
  answeredAt: number | null
  /** The last final Dial status, e.g. BUSY; '' while none came. */
  dialStatus: DialStatus
  /** The Local `;2` half's cause: only for the report, when the originated channel's own cause is 0 Unknown. */
  peerCause?: { code: number; text: string }
  session?: CallSession
  /** After this (ctx.clock ms) the watchdog hangs the call up and closes it. */
  deadline: number
  ending: boolean
}

const DEFAULT_VANISH_GRACE_MS = 2_000
/**
 * Margin on top of ring time and the agent's max duration (enforced by calls/time-limit.ts) before the watchdog gives
 * up on a call.
 */
const EXPIRY_MARGIN_MS = 5 * 60_000
/** For calls adopted after a restart, whose agent settings are unknown here. */
const ADOPTED_CALL_LIFETIME_MS = 600_000
/** A caller handed to a person is no longer bound by the agent's max duration; the watchdog still ends it some time. */
const TRANSFERRED_CALL_LIFETIME_MS = 4 * 3600_000
const NORMAL_CLEARING = 16
const UNKNOWN_CAUSE = 0

const CAUSE_OUTCOMES: Record<number, CallOutcome> = { 17: 'busy', 18: 'no_answer', 19: 'no_answer' }
/** Causes that say nothing about why an unanswered call ended: the Dial status decides instead. */
const UNSPECIFIC_CAUSES = new Set([UNKNOWN_CAUSE, NORMAL_CLEARING, 31])
const DIAL_STATUS_OUTCOMES: Partial<Record<DialStatus, CallOutcome>> = { BUSY: 'busy', NOANSWER: 'no_answer' }
const NON_FINAL_DIAL_STATUSES = new Set<DialStatus>(['', 'RINGING', 'PROGRESS', 'ANSWER'])

/** The outcome of a call that was never answered, from its own channel's cause and the last Dial status. */
export function unansweredOutcome(cause: number, dialStatus: DialStatus): CallOutcome {
  if (!UNSPECIFIC_CAUSES.has(cause)) return CAUSE_OUTCOMES[cause] ?? 'failed'
  return DIAL_STATUS_OUTCOMES[dialStatus] ?? 'failed'
}

/** What the adapter's parts share: the calls it follows, their media legs, the channels watched for them. */
type AdapterState = {
  ctx: AppContext
  options: AriAdapterOptions
  calls: Map<string, TrackedCall>
  /** Media leg channel id → its call. */
  mediaLegs: Map<string, TrackedCall>
  /** Channels that are not calls but whose events someone waits for (transfer destinations), by channel id. */
  watchers: Map<string, { configurationId: number; handlers: Set<(event: AriEvent) => void> }>
  vanishGraceMs: number
}

export function createAriAdapter(ctx: AppContext, options: AriAdapterOptions): AriAdapter {
  const state: AdapterState = {
    ctx,
    options,
    calls: new Map(),
    mediaLegs: new Map(),
    watchers: new Map(),
    vanishGraceMs: options.vanishGraceMs ?? DEFAULT_VANISH_GRACE_MS,
  }
  const life = callLifecycle(state)
  const { handleEvent } = eventRouting(state, life)
  const { dial, callState, hangup } = placing(state, life)
  const { reconcile, sweep, removeLeftovers } = reconciling(state, life)
  const calls = state.calls

  return {
    dial,
    hangup,
    callState,
    handleEvent,
    reconcile,
    sweep,
    removeLeftovers,
    openCallCount: () => calls.size,
  }
}

/** The Local `;2` half of a call we placed. */
const peerOf = (calls: Map<string, TrackedCall>, channel: Channel): TrackedCall | undefined =>
  channel.id.endsWith(';2') ? calls.get(channel.id.slice(0, -2)) : undefined

/** A call from tracked to its single report: answer, session, watched channels, end. */
function callLifecycle(state: AdapterState) {
  const { ctx, options, calls, mediaLegs, watchers } = state

  const logFields = (call: TrackedCall) => ({
    callId: call.callId,
    runId: call.run?.runId,
    configurationId: call.configurationId,
  })

  function track(
    call: Omit<TrackedCall, 'dialStatus' | 'ending' | 'answeredAt' | 'inbound'> & { inbound?: boolean },
    answeredAt: number | null = null,
  ): TrackedCall {
    const tracked: TrackedCall = { inbound: false, ...call, answeredAt, dialStatus: '', ending: false }
    calls.set(call.callId, tracked)
    return tracked
  }

  function markAnswered(call: TrackedCall) {
    if (call.answeredAt !== null) return
    call.answeredAt = ctx.clock.now()
    ctx.telephony.report({ kind: 'answered', callId: call.callId, at: call.answeredAt })
  }

  /** The call's channel is in Stasis answered: bridge, media leg, hand over to the conversation engine. */
  function startSession(call: TrackedCall) {
    const link = options.link(call.configurationId)
    if (call.session || !call.run || !link) return
    const { run } = call
    const template = run.credentials.dial_string_template
    call.session = startCallSession({
      ctx,
      rest: link.rest,
      ariEndpoint: link.endpoint,
      conversation: ctx.telephony.answering
        ? { onAnswered: (answered) => ctx.telephony.answered(answered) ?? Promise.resolve() }
        : undefined,
      call: {
        callId: call.callId,
        runId: run.runId,
        organizationId: run.organizationId,
        configurationId: call.configurationId,
        direction: call.inbound ? 'inbound' : 'outbound',
      },
      dialStringTemplate: typeof template === 'string' ? template : undefined,
      destinationRules: ariDestinationRules(run.credentials),
      watchChannel: (channelId, onEvent) => watchChannel(call.configurationId, channelId, onEvent),
      onTransferred: () => {
        call.deadline = ctx.clock.now() + TRANSFERRED_CALL_LIFETIME_MS
      },
    })
    mediaLegs.set(call.session.mediaChannelId, call)
  }

  /** Routes the events of `channelId` and of its Local `;2` half to `onEvent` until the returned function is called. */
  function watchChannel(configurationId: number, channelId: string, onEvent: (event: AriEvent) => void): () => void {
    const handlers = watchers.get(channelId)?.handlers ?? new Set()
    watchers.set(channelId, { configurationId, handlers: handlers.add(onEvent) })
    return () => {
      handlers.delete(onEvent)
      if (handlers.size === 0) watchers.delete(channelId)
    }
  }

  /** Reports the call's single 'ended', after its session (if any) let the conversation finish and tore down. */
  async function end(
    call: TrackedCall,
    outcome: CallOutcome,
    details: { cause?: { code: number; text: string }; providerStatus?: string },
  ) {
    if (call.ending) return
    call.ending = true
    const at = ctx.clock.now()
    const sessionEnd = await call.session?.finish()
    calls.delete(call.callId)
    if (call.session) mediaLegs.delete(call.session.mediaChannelId)
    const providerStatus = sessionEnd?.providerStatus ?? details.providerStatus
    const transfer = call.session?.transfer
    const report: CallReport = {
      kind: 'ended',
      callId: call.callId,
      outcome: sessionEnd?.outcome ?? outcome,
      at,
      answeredAt: call.answeredAt,
      ...(details.cause ? { cause: details.cause } : {}),
      ...(providerStatus ? { providerStatus } : {}),
      ...(transfer ? { transfer } : {}),
    }
    ctx.log.info({ ...logFields(call), outcome: report.outcome, cause: details.cause, providerStatus }, 'call ended')
    ctx.telephony.report(report)
    call.session?.reported()
  }

  function channelDestroyed(call: TrackedCall, code: number, text: string) {
    const cause = code === UNKNOWN_CAUSE && call.peerCause ? call.peerCause : { code, text }
    const outcome = call.answeredAt !== null ? 'completed' : unansweredOutcome(code, call.dialStatus)
    void end(call, outcome, { cause, providerStatus: call.dialStatus || undefined })
  }

  return { logFields, track, markAnswered, startSession, watchChannel, end, channelDestroyed }
}

type CallLifecycle = ReturnType<typeof callLifecycle>

/** Events of the websocket to the calls they concern; a channel entering our app unasked is an inbound call. */
function eventRouting(state: AdapterState, life: CallLifecycle) {
  const { ctx, options, calls, mediaLegs, watchers } = state
  const { logFields, track, markAnswered, startSession, end, channelDestroyed } = life

  function handleEvent(configurationId: number, event: AriEvent) {
    const channel = eventChannel(event)
    if (!channel) return
    const mediaOf = mediaLegs.get(channel.id)
    if (mediaOf) {
      if (mediaOf.configurationId === configurationId) mediaOf.session?.mediaEvent(event)
      return
    }
    const watching =
      watchers.get(channel.id) ?? (channel.id.endsWith(';2') ? watchers.get(channel.id.slice(0, -2)) : undefined)
    if (watching) {
      for (const onEvent of [...watching.handlers]) onEvent(event)
      return
    }
    const call = calls.get(channel.id) ?? peerOf(calls, channel)
    if (!call) {
      if (event.type === 'StasisStart') inboundCall(configurationId, event)
      return
    }
    if (call.configurationId !== configurationId || call.ending) return
    if (channel.id !== call.callId) {
      if (event.type === 'ChannelDestroyed') call.peerCause = { code: event.cause, text: event.cause_txt }
      return
    }
    switch (event.type) {
      case 'Dial':
        if (event.dialstatus === 'ANSWER') markAnswered(call)
        else if (!NON_FINAL_DIAL_STATUSES.has(event.dialstatus)) call.dialStatus = event.dialstatus
        break
      case 'ChannelStateChange':
        if (channel.state === 'Up') markAnswered(call)
        break
      case 'StasisStart':
        markAnswered(call)
        startSession(call)
        break
      case 'ChannelDtmfReceived':
        call.session?.dtmf(event.digit)
        break
      case 'ChannelHangupRequest':
        if (event.cause !== undefined && !event.soft) call.hangupCause = event.cause
        break
      case 'StasisEnd':
        if (call.inbound) {
          const code = call.hangupCause ?? NORMAL_CLEARING
          void end(call, call.answeredAt !== null ? 'completed' : 'failed', {
            cause: { code, text: code === NORMAL_CLEARING ? 'Normal Clearing' : `Cause ${code}` },
          })
        }
        break
      case 'ChannelDestroyed':
        channelDestroyed(call, event.cause, event.cause_txt)
        break
    }
  }

  /** A channel we did not create entered our app: route it, answer it and run its conversation, or hang it up. */
  function inboundCall(configurationId: number, event: StasisStart) {
    const link = options.link(configurationId)
    // A transfer destination nobody watches any more (its transfer gave up) is not a call from the dialplan.
    if (!link || event.application !== link.app || event.args[0] === TRANSFER_APP_ARG) return
    const { channel } = event
    const inbound: InboundCall = {
      configurationId,
      callId: channel.id,
      callerNumber: channel.caller.number,
      calledNumber: event.args[0] || channel.dialplan.exten,
    }
    let route: InboundRoute
    try {
      route = ctx.telephony.routeInbound({
        ...inbound,
        provider: ARI_PROVIDER,
        runName: (caller) => `ARI Inbound ${caller}`,
      })
    } catch (error) {
      ctx.log.error({ ...inbound, err: error }, 'inbound call routing failed')
      route = { refused: 'routing failed' }
    }
    if ('ours' in route) return
    if ('refused' in route) {
      ctx.log.info({ ...inbound, reason: route.refused }, 'inbound call refused: hanging up')
      void hangupIgnoringGone(link.rest, channel.id).catch((error) =>
        ctx.log.warn({ ...inbound, err: error }, 'could not hang up a refused inbound call'),
      )
      return
    }
    const call = track({
      callId: channel.id,
      configurationId,
      run: route.run,
      inbound: true,
      placed: true,
      deadline: ctx.clock.now() + route.run.maxCallDurationSeconds * 1000 + EXPIRY_MARGIN_MS,
    })
    ctx.log.info({ ...inbound, runId: route.run.runId }, 'inbound call accepted')
    link.rest.answer(channel.id).then(
      () => {
        if (call.ending) return
        markAnswered(call)
        startSession(call)
      },
      (error) => {
        ctx.log.warn({ ...logFields(call), err: error }, 'could not answer an inbound call')
        void hangupIgnoringGone(link.rest, channel.id).catch(() => undefined)
        void end(call, 'failed', { providerStatus: 'answer_failed' })
      },
    )
  }

  return { handleEvent }
}

/** Placing, looking up and hanging up calls. */
function placing(state: AdapterState, life: CallLifecycle) {
  const { ctx, options, calls } = state
  const { logFields, track } = life

  async function dial(request: DialRequest): Promise<void> {
    const link = options.link(request.configurationId)
    if (!link?.connected) {
      throw new DialError(
        'Asterisk is not connected for this telephony configuration (ARI events websocket down); try again shortly',
      )
    }
    const template =
      typeof request.credentials.dial_string_template === 'string' && request.credentials.dial_string_template !== ''
        ? request.credentials.dial_string_template
        : DEFAULT_DIAL_STRING_TEMPLATE
    let endpoint: string
    try {
      endpoint = buildAriDialString(request.destination, template, ariDestinationRules(request.credentials))
    } catch (error) {
      if (error instanceof AddressError) throw new DialError(error.message)
      throw error
    }
    const placedAt = ctx.clock.now()
    const call = track({
      callId: request.callId,
      configurationId: request.configurationId,
      placed: false,
      run: {
        runId: request.runId,
        organizationId: request.organizationId,
        maxCallDurationSeconds: request.maxCallDurationSeconds,
        credentials: request.credentials,
      },
      deadline: placedAt + (request.ringTimeoutSeconds + request.maxCallDurationSeconds) * 1000 + EXPIRY_MARGIN_MS,
    })
    try {
      await link.rest.originate({
        channelId: request.callId,
        endpoint,
        callerId: request.callerId ?? undefined,
        timeoutSeconds: request.ringTimeoutSeconds,
      })
      call.placed = true
    } catch (error) {
      if (!call.ending) calls.delete(call.callId)
      // No answer at all: the call may exist anyway; make sure it does not ring on unobserved.
      if (error instanceof AriError && error.status === null)
        void hangupIgnoringGone(link.rest, request.callId).catch(() => undefined)
      ctx.log.warn({ ...logFields(call), endpoint, err: error }, 'originate failed')
      throw new DialError(dialErrorMessage(error))
    }
  }

  async function callState(configurationId: number, callId: string): Promise<CallState> {
    const rest = options.restFor(configurationId)
    if (!rest) return 'unknown'
    try {
      const channel = await rest.getChannel(callId)
      if (!calls.has(callId)) {
        track(
          { callId, configurationId, placed: true, deadline: ctx.clock.now() + ADOPTED_CALL_LIFETIME_MS },
          channel.state === 'Up' ? ctx.clock.now() : null,
        )
      }
      return 'alive'
    } catch (error) {
      if (error instanceof AriError && error.status === 404) return 'gone'
      ctx.log.warn({ configurationId, callId, err: error }, 'ARI call state lookup failed')
      return 'unknown'
    }
  }

  async function hangup(configurationId: number, callId: string): Promise<void> {
    const rest = options.restFor(configurationId)
    if (!rest) throw new DialError('No ARI connection settings for this telephony configuration')
    await hangupIgnoringGone(rest, callId)
  }

  return { dial, callState, hangup }
}

/** After a (re)connect and on the watchdog: what Asterisk says is live against the calls we follow. */
function reconciling(state: AdapterState, life: CallLifecycle) {
  const { ctx, options, calls, watchers, vanishGraceMs } = state
  const { logFields, markAnswered, startSession, end } = life

  async function liveChannels(rest: AriRest): Promise<Map<string, Channel>> {
    return new Map((await rest.listChannels()).map((channel) => [channel.id, channel]))
  }

  /** The channels of the configuration's open calls whose events we follow: calls, Local halves, media legs, watched. */
  function followedChannelIds(configurationId: number, open: TrackedCall[]): string[] {
    const ids = open.flatMap((call) => [
      call.callId,
      `${call.callId};2`,
      ...(call.session ? [call.session.mediaChannelId] : []),
    ])
    for (const [channelId, watcher] of watchers) {
      if (watcher.configurationId === configurationId) ids.push(channelId, `${channelId};2`)
    }
    return ids
  }

  /** Asterisk refuses the whole subscription if one channel is gone, so only channels just seen live are asked for. */
  async function resubscribe(rest: AriRest, configurationId: number, open: TrackedCall[], live: Map<string, Channel>) {
    const sources = followedChannelIds(configurationId, open)
      .filter((id) => live.has(id))
      .map((id) => `channel:${id}`)
    if (sources.length === 0) return
    await rest.subscribe(sources).catch((error) => {
      ctx.log.warn({ configurationId, err: error }, 'could not subscribe the ARI app to its open calls again')
    })
  }

  async function reconcile(configurationId: number, reconcileOptions: { resubscribe?: boolean } = {}): Promise<void> {
    const open = () =>
      [...calls.values()].filter((call) => call.configurationId === configurationId && call.placed && !call.ending)
    if (open().length === 0) return
    const rest = options.restFor(configurationId)
    if (!rest) return
    try {
      let live = await liveChannels(rest)
      if (reconcileOptions.resubscribe) await resubscribe(rest, configurationId, open(), live)
      for (const call of open()) {
        const channel = live.get(call.callId)
        if (channel?.state === 'Up') {
          markAnswered(call)
          if (channel.dialplan.app_name === 'Stasis') startSession(call)
        }
      }
      if (!open().some((call) => !live.has(call.callId))) return
      await Bun.sleep(vanishGraceMs)
      live = await liveChannels(rest)
      for (const call of open().filter((candidate) => !live.has(candidate.callId))) {
        ctx.log.warn(logFields(call), 'call channel vanished without a ChannelDestroyed event')
        void end(call, 'failed', { providerStatus: 'vanished' })
      }
    } catch (error) {
      ctx.log.warn({ configurationId, err: error }, 'ARI reconciliation failed; the watchdog will retry')
    }
  }

  async function sweep(): Promise<void> {
    const now = ctx.clock.now()
    for (const call of [...calls.values()].filter((candidate) => !candidate.ending && candidate.deadline <= now)) {
      ctx.log.error(logFields(call), 'call open past its deadline: hanging up and closing it')
      const rest = options.restFor(call.configurationId)
      if (rest) void hangupIgnoringGone(rest, call.callId).catch(() => undefined)
      void end(call, 'failed', { providerStatus: 'expired' })
    }
    const configurationIds = new Set(
      [...calls.values()].filter((call) => !call.ending).map((call) => call.configurationId),
    )
    await Promise.all([...configurationIds].map((configurationId) => reconcile(configurationId)))
  }

  /** Works for any call id. A live call not tracked (placed before a restart) is adopted so its end is reported. */
  async function removeLeftovers(ownership: (callId: string) => CallOwnership): Promise<number> {
    let removed = 0
    for (const configurationId of options.configurationIds?.() ?? []) {
      const rest = options.restFor(configurationId)
      if (!rest) continue
      try {
        const objects = await removeAriLeftovers(rest, ownership)
        if (objects.length > 0)
          ctx.log.warn({ configurationId, objects }, 'removed PBX objects left by calls interrupted by a restart')
        removed += objects.length
      } catch (error) {
        ctx.log.warn({ configurationId, err: error }, 'could not remove PBX objects left by interrupted calls')
      }
    }
    return removed
  }

  return { reconcile, sweep, removeLeftovers }
}

/** Asterisk's own words and the status: safe for API clients (no URL, no credentials). */
function dialErrorMessage(error: unknown): string {
  if (error instanceof AriError) {
    return error.status === null
      ? `Asterisk unreachable: ${error.message}`
      : `Asterisk refused the call (HTTP ${error.status}: ${error.message})`
  }
  return 'Asterisk refused the call'
}
