/**
 * The ARI objects and events Ringbase uses, as Asterisk 22 (ARI 10) sends them: field names are Asterisk's own
 * (snake_case), shapes follow the Swagger models in api-docs and the recorded traffic in event-traces.json.
 */

/** Where and how to reach ARI. `endpoint` is the HTTP base, with or without a trailing `/ari`. */
export type AriConnectionSettings = {
  /** e.g. `http://127.0.0.1:8088` or `https://pbx.example/ari` */
  endpoint: string
  username: string
  password: string
  /** The Stasis application name the events websocket registers. */
  app: string
}

/** pino-compatible; the ARI client never passes credentials to it. */
export type AriLogger = {
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
  debug(obj: object, msg?: string): void
}

export type ChannelState =
  | 'Down'
  | 'Rsrved'
  | 'OffHook'
  | 'Dialing'
  | 'Ring'
  | 'Ringing'
  | 'Up'
  | 'Busy'
  | 'Dialing Offhook'
  | 'Pre-ring'
  | 'Unknown'

export type CallerId = { name: string; number: string }

export type DialplanLocation = { context: string; exten: string; priority: number; app_name: string; app_data: string }

export type Channel = {
  id: string
  name: string
  state: ChannelState
  protocol_id: string
  caller: CallerId
  connected: CallerId
  accountcode: string
  dialplan: DialplanLocation
  /** Asterisk's format, e.g. `2026-11-22T02:12:01.520+0000` */
  creationtime: string
  language: string
  channelvars?: Record<string, string>
  caller_rdnis?: string
  tenantid?: string
}

export type Bridge = {
  id: string
  technology: string
  bridge_type: 'mixing' | 'holding'
  bridge_class: string
  creator: string
  name: string
  channels: string[]
  creationtime: string
  video_mode?: string
  video_source_id?: string
  bridgevars?: Record<string, string>
}

export type Playback = {
  id: string
  media_uri: string
  next_media_uri?: string
  target_uri: string
  language?: string
  state: 'queued' | 'playing' | 'paused' | 'continuing' | 'done' | 'failed'
}

export type AsteriskInfo = {
  build?: { os: string; kernel: string; options: string; machine: string; date: string; user: string }
  system?: { version: string; entity_id: string }
  config?: {
    name: string
    default_language: string
    max_channels?: number
    max_open_files?: number
    max_load?: number
    setid: { user: string; group: string }
  }
  status?: { startup_time: string; last_reload_time: string }
}

export type AsteriskPing = { asterisk_id: string; ping: string; timestamp: string }

/** Asterisk's DIALSTATUS values; `''` is the first Dial event of an attempt. */
export type DialStatus =
  | ''
  | 'RINGING'
  | 'PROGRESS'
  | 'ANSWER'
  | 'BUSY'
  | 'NOANSWER'
  | 'CANCEL'
  | 'CONGESTION'
  | 'CHANUNAVAIL'
  | 'DONTCALL'
  | 'TORTURE'
  | 'INVALIDARGS'

type EventBase = { application: string; timestamp: string; asterisk_id?: string }

export type StasisStart = EventBase & {
  type: 'StasisStart'
  args: string[]
  channel: Channel
  replace_channel?: Channel
}
export type StasisEnd = EventBase & { type: 'StasisEnd'; channel: Channel }
export type ChannelCreated = EventBase & { type: 'ChannelCreated'; channel: Channel }
export type ChannelStateChange = EventBase & { type: 'ChannelStateChange'; channel: Channel }
/** Take the call's cause from here: `ChannelHangupRequest.cause` can be an internal flag. */
export type ChannelDestroyed = EventBase & {
  type: 'ChannelDestroyed'
  cause: number
  cause_txt: string
  tech_cause?: number
  channel: Channel
}
export type ChannelHangupRequest = EventBase & {
  type: 'ChannelHangupRequest'
  cause?: number
  tech_cause?: number
  soft?: boolean
  channel: Channel
}
/** `peer` is the dialled channel (the one originated); `caller` is absent for an originate. */
export type Dial = EventBase & {
  type: 'Dial'
  caller?: Channel
  peer: Channel
  forward?: string
  forwarded?: Channel
  dialstring?: string
  dialstatus: DialStatus
}
export type ChannelDialplan = EventBase & {
  type: 'ChannelDialplan'
  channel: Channel
  dialplan_app: string
  dialplan_app_data: string
}
/** Without `channel` the variable is a global one. */
export type ChannelVarset = EventBase & { type: 'ChannelVarset'; variable: string; value: string; channel?: Channel }
export type ChannelDtmfReceived = EventBase & {
  type: 'ChannelDtmfReceived'
  digit: string
  duration_ms: number
  channel: Channel
}
export type ChannelEnteredBridge = EventBase & { type: 'ChannelEnteredBridge'; bridge: Bridge; channel?: Channel }
export type ChannelLeftBridge = EventBase & { type: 'ChannelLeftBridge'; bridge: Bridge; channel: Channel }
export type BridgeCreated = EventBase & { type: 'BridgeCreated'; bridge: Bridge }
export type BridgeDestroyed = EventBase & { type: 'BridgeDestroyed'; bridge: Bridge }
export type PlaybackStarted = EventBase & { type: 'PlaybackStarted'; playback: Playback }
export type PlaybackFinished = EventBase & { type: 'PlaybackFinished'; playback: Playback }
/** Another websocket registered the same app: this socket stays open but receives nothing more. */
export type ApplicationReplaced = EventBase & { type: 'ApplicationReplaced' }

/** The remaining event types of events.json; their fields are not modelled. */
export type OtherAriEventType =
  | 'DeviceStateChanged'
  | 'PlaybackContinuing'
  | 'ApplicationMoveFailed'
  | 'ApplicationRegistered'
  | 'ApplicationUnregistered'
  | 'BridgeMerged'
  | 'BridgeBlindTransfer'
  | 'BridgeAttendedTransfer'
  | 'BridgeVideoSourceChanged'
  | 'ChannelCallerId'
  | 'ChannelUserevent'
  | 'ChannelToneDetected'
  | 'ChannelTalkingStarted'
  | 'ChannelTalkingFinished'
  | 'ChannelHold'
  | 'ChannelUnhold'
  | 'ContactStatusChange'
  | 'EndpointStateChange'
  | 'TextMessageReceived'
  | 'ChannelConnectedLine'
  | 'PeerStatusChange'
  | 'ChannelTransfer'
  | 'RESTResponse'
  | 'CallBroadcast'
  | 'CallClaimed'
  | 'MissingParams'
export type OtherAriEvent = { type: OtherAriEventType; [field: string]: unknown }

export type AriEvent =
  | StasisStart
  | StasisEnd
  | ChannelCreated
  | ChannelStateChange
  | ChannelDestroyed
  | ChannelHangupRequest
  | Dial
  | ChannelDialplan
  | ChannelVarset
  | ChannelDtmfReceived
  | ChannelEnteredBridge
  | ChannelLeftBridge
  | BridgeCreated
  | BridgeDestroyed
  | PlaybackStarted
  | PlaybackFinished
  | ApplicationReplaced
  | OtherAriEvent

/** The channel an event is about: `channel`, or `peer` for Dial; undefined for events about no channel. */
export function eventChannel(event: AriEvent): Channel | undefined {
  if (event.type === 'Dial') return event.peer
  const channel = 'channel' in event ? event.channel : undefined
  return isChannel(channel) ? channel : undefined
}

function isChannel(value: unknown): value is Channel {
  return typeof value === 'object' && value !== null && typeof (value as { id?: unknown }).id === 'string'
}
