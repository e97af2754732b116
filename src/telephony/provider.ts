import type { AnsweredCall, ConversationOutcome } from './ari/call-session'
import type { Credentials, ProviderName } from '../db/schema/telephony'

/**
 * The seam between whoever wants a call (API trigger, campaign scheduler) and whoever places it (ARI, a carrier API,
 * a test fake). Callers create the run first, then ask a provider to dial; outcomes come back as CallReports.
 */

/** How a call ended, from the run's point of view. */
export type CallOutcome = 'completed' | 'busy' | 'no_answer' | 'voicemail' | 'failed' | 'canceled'

export type DialRequest = {
  /** Chosen by us before dialing and stored on the run, so events that race the dial response can be correlated. */
  callId: string
  runId: number
  organizationId: number
  /** The agent the run belongs to (carriers put it in the media stream's URL). */
  agentId: number
  configurationId: number
  /** Decrypted credentials of the telephony configuration. */
  credentials: Record<string, unknown>
  destination: string
  /** The caller id to present, or null for the provider's default. */
  callerId: string | null
  /** How long to let it ring. */
  ringTimeoutSeconds: number
  /**
   * The agent's time limit of an answered call, enforced by calls/time-limit.ts; the backstops derive from it (a
   * carrier's own time-limit field, the ARI watchdog's deadline).
   */
  maxCallDurationSeconds: number
  /**
   * The agent offers a transfer tool: the call may outlive the agent's part, so a carrier gets no time limit of ours
   * (its own ceiling applies) and Ringbase ends the agent's part itself, as it does on every call.
   */
  mayBeTransferred: boolean
  /** Ask the provider to tell a machine from a person on answer, where it can (a machine ends the call as voicemail). */
  detectAnsweringMachine: boolean
}

/** The provider refused (`unreachable` false) or could not be reached; `message` is safe to show to the API client. */
export class DialError extends Error {
  constructor(
    message: string,
    readonly unreachable = false,
  ) {
    super(message)
  }
}

export type CallReport =
  | { kind: 'answered'; callId: string; at: number }
  | {
      kind: 'ended'
      callId: string
      outcome: CallOutcome
      at: number
      /** When the far end answered, or null if it never did. */
      answeredAt: number | null
      /** Q.850 cause, when the provider reports one. */
      cause?: { code: number; text: string }
      /** Provider-specific status, e.g. ARI's dialstatus BUSY / NOANSWER / CONGESTION. */
      providerStatus?: string
      /** Object-store key of the call recording, if one was made. */
      recordingKey?: string
      /** The agent handed the caller to `destination` at `connectedAt`; the call went on from there. */
      transfer?: { destination: string; connectedAt: number }
    }

export type CallState = 'alive' | 'gone' | 'unknown'

/** Whose a call id is, by our records: a run still open, a run closed, or no run of ours (another system's call). */
export type CallOwnership = 'open' | 'closed' | 'unknown'

export interface TelephonyProvider {
  /** Resolves once the provider accepted the call; rejects with DialError when it did not. */
  dial(request: DialRequest): Promise<void>
  hangup(configurationId: number, callId: string): Promise<void>
  /** For reconciliation after a restart: whether the call is still up at the provider. */
  callState(configurationId: number, callId: string): Promise<CallState>
  /**
   * After a restart: removes what the provider keeps on our behalf (e.g. ARI bridges, media channels) for calls whose
   * run is `closed`; never touches an `open` call's or anything not ours. Returns how many objects were removed.
   */
  removeLeftovers?(ownership: (callId: string) => CallOwnership): Promise<number>
}

export type CallReportListener = (report: CallReport) => void

/**
 * Runs an answered call's conversation, whatever its transport (an ARI media leg, a carrier media stream, later a web
 * call); resolves once it is over and its results are stored (calls/voice.ts).
 */
export type AnsweredCallHandler = (call: AnsweredCall) => Promise<ConversationOutcome | void>

/** A call a provider offers on one of its configurations. */
export type InboundOffer = {
  provider: string
  configurationId: number
  callerNumber: string
  calledNumber: string
  /** Our id of the call (a run's call_id). */
  callId: string
  /** The carrier's own id of the call, when it has one apart from ours. */
  providerCallId?: string
  /** The run's name, e.g. `ARI Inbound +4420…`. */
  runName: (callerNumber: string) => string
}

/** The run behind a call, as a provider needs it; `credentials` (its configuration's, decrypted) dial its transfers. */
export type CallRun = {
  runId: number
  organizationId: number
  maxCallDurationSeconds: number
  credentials: Record<string, unknown>
}

/** The run an inbound call was given; why it is refused (it is then hung up); or `ours`: a call this app placed (before a restart), left alone. */
export type InboundRoute = { run: CallRun } | { refused: string } | { ours: true }

/** Where inbound calls go, on every provider (calls/inbound.ts). */
export type InboundRouter = (offer: InboundOffer) => InboundRoute

/** How long carrier calls wait on their carrier before deciding without it; tests shorten them. */
export type CarrierWaits = {
  /** Beyond a transfer's ring timeout, how long the carrier has to say how the transfer went. */
  transferOutcomeGraceMs: number
  /** After a failed transfer, how long the caller has to reappear on a media stream. */
  transferReturnMs: number
  /** After the media stream ended, how long a carrier that reports on the call has for its final status. */
  finalStatusGraceMs: number
}

const CARRIER_WAITS: CarrierWaits = {
  transferOutcomeGraceMs: 15_000,
  transferReturnMs: 15_000,
  finalStatusGraceMs: 10_000,
}

/** A stored telephony configuration with its credentials decrypted. */
export type OpenedConfiguration = { organizationId: number; provider: ProviderName; credentials: Credentials }

/** An active ARI configuration as the ARI manager connects it. */
export type AriConfiguration = {
  id: number
  organizationId: number
  name: string
  credentials: Credentials
  /** Changes whenever the configuration is edited: compare it to know when to reconnect. */
  updatedAt: string
}

/**
 * The stored configurations as the transports read them. The configuration side (telephony/config/) sits above the
 * transports because it validates and seals credentials with their metadata, so boot hands this reader down.
 */
export type StoredConfigurations = {
  /** Any configuration by id, any organization: check `organizationId` against the caller. */
  opened(configurationId: number): OpenedConfiguration | null
  /** Every active ARI configuration of every organization (one that cannot be opened is marked inactive and left out). */
  activeAri(): AriConfiguration[]
  /** Takes a configuration out of use with the reason shown to the admin; false when it already was. */
  markInactive(configurationId: number, reason: string): boolean
}

/** Providers by name, the fan-out of their call reports, and where answered and inbound calls go. Lives on the AppContext. */
export type Telephony = {
  waits: CarrierWaits
  providerFor(provider: string): TelephonyProvider | null
  registered(): TelephonyProvider[]
  register(provider: string, implementation: TelephonyProvider): void
  onReport(listener: CallReportListener): () => void
  report(report: CallReport): void
  /**
   * The one way an answered call gets its conversation, on every transport: boot attaches the handler (one at a time),
   * transports hand their answered calls to `answered`.
   */
  onAnswered(handler: AnsweredCallHandler): () => void
  /** Runs the call's conversation; null when none is attached (the caller would hear silence). */
  answered(call: AnsweredCall): Promise<ConversationOutcome | void> | null
  /** Whether a conversation is attached (ARI sets up a call's media leg only then). */
  readonly answering: boolean
  /** The one way an inbound call is routed, on every provider: boot attaches the router; without one every call is refused. */
  routeInboundWith(router: InboundRouter): void
  routeInbound(offer: InboundOffer): InboundRoute
  /** The stored configurations, once boot has attached their reader (readConfigurationsFrom). */
  readonly configurations: StoredConfigurations
  readConfigurationsFrom(reader: StoredConfigurations): void
}

/** Resolves once the call's end has been reported (its run completed with the call's outcome). */
export function endReported(telephony: Telephony, callId: string): Promise<void> {
  return new Promise((resolve) => {
    const stop = telephony.onReport((report) => {
      if (report.kind !== 'ended' || report.callId !== callId) return
      stop()
      resolve()
    })
  })
}

export function createTelephony(): Telephony {
  const providers = new Map<string, TelephonyProvider>()
  const listeners = new Set<CallReportListener>()
  let answer: AnsweredCallHandler | null = null
  let router: InboundRouter = () => ({ refused: 'inbound calls are not routed here' })
  let configurations: StoredConfigurations | null = null
  return {
    waits: { ...CARRIER_WAITS },
    providerFor: (provider) => providers.get(provider) ?? null,
    registered: () => [...providers.values()],
    register: (provider, implementation) => {
      providers.set(provider, implementation)
    },
    onReport(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    report(report) {
      for (const listener of listeners) listener(report)
    },
    onAnswered(handler) {
      answer = handler
      return () => {
        if (answer === handler) answer = null
      }
    },
    answered: (call) => answer?.(call) ?? null,
    get answering() {
      return answer !== null
    },
    routeInboundWith(given) {
      router = given
    },
    routeInbound: (offer) => router(offer),
    get configurations() {
      if (!configurations) throw new Error('no reader of stored telephony configurations is attached')
      return configurations
    },
    readConfigurationsFrom(reader) {
      configurations = reader
    },
  }
}
