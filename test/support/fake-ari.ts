/**
 * A fake Asterisk ARI (22.10, ARI 10) for black-box tests, replaying what a real Asterisk sent.
 *
 * Every call outcome below is a recorded sequence from shared/reference/ari/event-traces.json (scenario names
 * in the comments): the same event types, order, channel halves, states, causes and dial statuses, with the
 * channel ids rewritten to the ids of the call being faked and the timing multiplied by `timeScale`.
 * Local/… endpoints get both halves of the Local pair (`<id>` and `<id>;2`, or otherChannelId), as Asterisk does;
 * any other technology gets only the originated channel's events. Error bodies are Asterisk's own.
 *
 * Inbound calls (`inboundCall`) replay inbound_stasis_answer_hangup / inbound_stasis_caller_abandons: the channel enters
 * the app ringing with the extension as its argument, and leaves with StasisEnd but no ChannelDestroyed.
 *
 * externalMedia in server mode over websocket (`transport=websocket&connection_type=server`) follows
 * media-traces.json: the answer is a `WebSocket/INCOMING/…` channel, Down, whose `channelvars` carry
 * MEDIA_WEBSOCKET_CONNECTION_ID; the app connects to `/media/<that id>` on this same server (the fake chan_websocket
 * of fake-ari-media.ts) and only then does the channel come Up and enter the app. The app closing that socket hangs up
 * only the media channel (cause 16); deleting the media channel closes the socket (1000).
 *
 * Who gets which event (the app's subscriptions). The traces were recorded WITHOUT subscribeAll (their ws_url is
 * `/ari/events?app=testapp`), so they show exactly what a plain app receives, and the fake delivers the same:
 * - a channel originated with `app=` (and, for Local, its `;2` half) from the originate until it is destroyed, ringing
 *   and unanswered endings included (busy_486, noanswer_408_timeout5; GET /applications/reconnapp in
 *   ws_disconnect_reconnect lists both halves); an externalMedia channel likewise (media-traces app_closes_media);
 * - a channel that entered the app from the dialplan only while it is in Stasis: StasisEnd, then nothing
 *   (inbound_stasis_answer_hangup);
 * - StasisStart / StasisEnd only to the app the channel is in;
 * - ChannelEnteredBridge / ChannelLeftBridge for its channels (bridge_two_channels), and for anything in a bridge it
 *   subscribed to;
 * - whatever `POST /applications/{app}/subscription` added (`channel:<id>`, `bridge:<id>`; applications.json), until
 *   the channel is destroyed;
 * - subscriptions belong to the app, not to the socket: they survive a reconnect, and events with no socket for the app
 *   are lost, not replayed (ws_disconnect_reconnect).
 * A socket opened with `subscribeAll=true` gets every channel and bridge event of the fake (ws_edge_cases
 * multi_app_subscribeAll), so tests can tell the two apart.
 *
 * What the traces do not show (other externalMedia modes, playing to a bridge, removing a channel from one) is kept minimal and follows the Swagger descriptions in
 * shared/reference/ari/api-docs; playbacks answer and send events as trace app_play_then_hangup_103 does for a channel.
 */
import type { Server, ServerWebSocket } from 'bun'
import type {
  AriConnectionSettings,
  Bridge,
  CallerId,
  Channel,
  ChannelState,
  Playback,
} from '../../src/telephony/ari/types'
import { createFakeMediaHub, type FakeMediaChannel, type MediaSocketData } from './fake-ari-media'

export type FakeAriScenario =
  | 'answered'
  | 'answered-stays-up'
  | 'ringing-then-answered'
  | 'busy'
  | 'no-answer'
  | 'congestion'
  | 'rejected'
  | 'unallocated'
  | 'nonexistent-extension'

export type FakeAriOptions = {
  username?: string
  password?: string
  /** Multiplies the recorded offsets: the default 0.001 plays a 5 s call in 5 ms. */
  timeScale?: number
  /** Dialled endpoint → scenario, over the defaults (the trace's own extensions, see DEFAULT_SCENARIOS). */
  scenarios?: Record<string, FakeAriScenario>
  /** For endpoints not in `scenarios`. */
  defaultScenario?: FakeAriScenario
  /**
   * How long originate and externalMedia wait before answering, while the call's first events already flow:
   * Asterisk's events often overtake its REST response.
   */
  responseLagMs?: number
  /** Media sockets are refused (404), as when Asterisk's HTTP server does not reach chan_websocket. */
  refuseMediaSockets?: boolean
}

export type RecordedRequest = { method: string; path: string; query: Record<string, string>; body: unknown }

export type FakeAri = {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** Settings that reach this fake with its current credentials. */
  settings(app?: string): AriConnectionSettings
  /** Every HTTP request, websocket upgrades and refused ones included, oldest first. */
  readonly requests: RecordedRequest[]
  /** Websockets currently open. */
  readonly socketCount: number
  liveChannelIds(): string[]
  /** Bridges that exist (Asterisk keeps a bridge until it is destroyed, empty or not). */
  bridgeIds(): string[]
  /** Cuts every websocket without a close frame, as a crashed Asterisk or a dead link would. */
  dropSockets(): void
  /** Stops reading every open websocket: no more pongs or anything else, while TCP stays up. */
  freezeSockets(): void
  /** true: stop listening (connections are refused); false: listen again on the same port. */
  refuseConnections(on: boolean): Promise<void>
  setCredentials(username: string, password: string): void
  /** Sends an arbitrary event to an app (default: every connected app); missing base fields are filled in. */
  emit(event: { type: string; [field: string]: unknown }, app?: string): void
  /** The far end hangs up (trace answer_100's hangup, or the caller of an inbound call), whatever it was doing. */
  hangup(channelId: string): void
  /** Playbacks still playing, by id (a `tone:` plays until stopped). */
  playingIds(): string[]
  /** The channels in a bridge, or undefined when there is no such bridge. */
  bridgeChannels(bridgeId: string): string[] | undefined
  /** A call from the dialplan into `app` (default: every connected app's first), `Stasis(app,${EXTEN})`; returns its channel id. */
  inboundCall(options: { exten: string; callerNumber?: string; app?: string }): string
  /** The caller presses a key on the channel. */
  dtmf(channelId: string, digit: string): void
  /** The media endpoint of the externalMedia channel sharing a bridge with `channelId`, once there is one. */
  mediaOf(channelId: string): FakeMediaChannel | undefined
  close(): Promise<void>
}

// ---------------------------------------------------------------------------------------------------------------
// Recorded sequences

type StepType =
  | 'Dial'
  | 'ChannelDialplan'
  | 'ChannelStateChange'
  | 'ChannelVarset'
  | 'StasisStart'
  | 'StasisEnd'
  | 'ChannelHangupRequest'
  | 'ChannelDestroyed'

/** One recorded event: ms from the start, which Local half it is about, that half's state then, its own fields. */
type Step = { at: number; half: 1 | 2; type: StepType; state?: ChannelState; fields?: Record<string, unknown> }

const step = (
  at: number,
  half: 1 | 2,
  type: StepType,
  state?: ChannelState,
  fields?: Record<string, unknown>,
): Step => ({ at, half, type, state, fields })

/** answer_100 from t=5510 (far end runs Hangup(16)), offsets rebased; states are whatever the call has then. */
const FAR_END_HANGUP: Step[] = [
  step(0, 2, 'ChannelDialplan', undefined, { dialplan_app: 'Hangup', dialplan_app_data: '16' }),
  step(0, 2, 'ChannelHangupRequest', undefined, { cause: 16, soft: true }),
  step(0, 1, 'ChannelHangupRequest', undefined, { cause: 16 }),
  step(0, 2, 'ChannelDestroyed', undefined, { cause: 16, cause_txt: 'Normal Clearing' }),
  step(0, 1, 'StasisEnd'),
  step(0, 1, 'ChannelVarset', undefined, { variable: 'STASISSTATUS', value: 'SUCCESS' }),
  step(0, 1, 'ChannelDestroyed', undefined, { cause: 16, cause_txt: 'Normal Clearing' }),
]

/** app_hangup_102 after its DELETE /channels/{id} (t=306), offsets rebased. */
/** inbound_stasis_answer_hangup after the app's DELETE: no ChannelDestroyed reaches the app. */
const INBOUND_APP_HANGUP: Step[] = [
  step(0, 1, 'ChannelHangupRequest', undefined, { cause: 32 }),
  step(0, 1, 'StasisEnd'),
]

/** The caller of an inbound call hangs up (inbound_stasis_caller_abandons, with its cause 16 once answered). */
const INBOUND_CALLER_HANGUP: Step[] = [
  step(0, 1, 'ChannelHangupRequest', undefined, { cause: 16 }),
  step(0, 1, 'StasisEnd'),
]

/** app_closes_media and the end of echo_json: the media channel alone is hung up. */
const MEDIA_HANGUP: Step[] = [
  step(0, 1, 'ChannelHangupRequest', undefined, { cause: 16 }),
  step(0, 1, 'StasisEnd'),
  step(0, 1, 'ChannelVarset', undefined, { variable: 'STASISSTATUS', value: 'SUCCESS' }),
  step(0, 1, 'ChannelDestroyed', undefined, { cause: 16, cause_txt: 'Normal Clearing' }),
]

const APP_HANGUP: Step[] = [
  step(0, 1, 'ChannelHangupRequest', undefined, { cause: 32, soft: true }),
  step(0, 1, 'StasisEnd'),
  step(0, 1, 'ChannelVarset', undefined, { variable: 'STASISSTATUS', value: 'SUCCESS' }),
  step(0, 2, 'ChannelHangupRequest', undefined, { cause: 16 }),
  step(0, 1, 'ChannelDestroyed', undefined, { cause: 16, cause_txt: 'Normal Clearing' }),
  step(1, 2, 'ChannelHangupRequest', undefined, { cause: 16, soft: true }),
  step(1, 2, 'ChannelDestroyed', undefined, { cause: 16, cause_txt: 'Normal Clearing' }),
]

type Script = {
  steps: Step[]
  /** When the far end hangs up on its own (FAR_END_HANGUP), if it does. */
  farEndHangupAt?: number
  /** The recorded originate timeout: steps from here on move to the request's own timeout. */
  recordedTimeoutMs?: number
}

const SCRIPTS: Record<FakeAriScenario, Script> = {
  // answer_100: Answer(), Wait(5), Hangup(16)
  answered: {
    steps: [
      step(4, 1, 'Dial', 'Down', { dialstatus: '' }),
      step(4, 2, 'ChannelDialplan', 'Ring', {
        dialplan_app: 'NoOp',
        dialplan_app_data: 'test 100: answer, wait 5s, hangup',
      }),
      step(4, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Answer', dialplan_app_data: '' }),
      step(4, 2, 'ChannelStateChange', 'Up'),
      step(4, 1, 'ChannelStateChange', 'Up'),
      step(4, 1, 'Dial', 'Up', { dialstatus: 'ANSWER' }),
      step(4, 1, 'ChannelVarset', 'Up', { variable: 'STASISSTATUS', value: '' }),
      step(4, 1, 'StasisStart', 'Up'),
      step(504, 2, 'ChannelDialplan', 'Up', { dialplan_app: 'Wait', dialplan_app_data: '5' }),
    ],
    farEndHangupAt: 5510,
  },
  // app_hangup_102 until the app's DELETE: Answer() then Echo() until someone hangs up
  'answered-stays-up': {
    steps: [
      step(3, 1, 'Dial', 'Down', { dialstatus: '' }),
      step(3, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Answer', dialplan_app_data: '' }),
      step(3, 2, 'ChannelStateChange', 'Up'),
      step(3, 1, 'ChannelStateChange', 'Up'),
      step(4, 1, 'Dial', 'Up', { dialstatus: 'ANSWER' }),
      step(4, 1, 'ChannelVarset', 'Up', { variable: 'STASISSTATUS', value: '' }),
      step(4, 1, 'StasisStart', 'Up'),
    ],
  },
  // ring_then_answer_200: Ringing(), Wait(2), Answer(), Wait(5), Hangup(16)
  'ringing-then-answered': {
    steps: [
      step(3, 1, 'Dial', 'Down', { dialstatus: '' }),
      step(3, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Ringing', dialplan_app_data: '' }),
      step(3, 1, 'ChannelStateChange', 'Ringing'),
      step(3, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Wait', dialplan_app_data: '2' }),
      step(3, 1, 'Dial', 'Ringing', { dialstatus: 'RINGING' }),
      step(2005, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Answer', dialplan_app_data: '' }),
      step(2005, 2, 'ChannelStateChange', 'Up'),
      step(2005, 1, 'ChannelStateChange', 'Up'),
      step(2005, 1, 'Dial', 'Up', { dialstatus: 'ANSWER' }),
      step(2005, 1, 'ChannelVarset', 'Up', { variable: 'STASISSTATUS', value: '' }),
      step(2005, 1, 'StasisStart', 'Up'),
      step(2506, 2, 'ChannelDialplan', 'Up', { dialplan_app: 'Wait', dialplan_app_data: '5' }),
    ],
    farEndHangupAt: 7511,
  },
  // busy_486: Busy(20)
  busy: {
    steps: [
      step(4, 1, 'Dial', 'Down', { dialstatus: '' }),
      step(4, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Busy', dialplan_app_data: '20' }),
      step(4, 2, 'ChannelStateChange', 'Busy'),
      step(4, 1, 'Dial', 'Down', { dialstatus: 'BUSY' }),
      step(4, 2, 'ChannelHangupRequest', 'Busy', { cause: 0 }),
      step(4, 2, 'ChannelHangupRequest', 'Busy', { cause: 16, soft: true }),
      step(4, 2, 'ChannelDestroyed', 'Busy', { cause: 17, cause_txt: 'User busy' }),
      step(4, 1, 'ChannelDestroyed', 'Down', { cause: 0, cause_txt: 'Unknown' }),
    ],
  },
  // noanswer_408_timeout5: Ringing(), Wait(86400), originated with timeout=5
  'no-answer': {
    steps: [
      step(3, 1, 'Dial', 'Down', { dialstatus: '' }),
      step(3, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Ringing', dialplan_app_data: '' }),
      step(3, 1, 'ChannelStateChange', 'Ringing'),
      step(3, 1, 'Dial', 'Ringing', { dialstatus: 'RINGING' }),
      step(3, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Wait', dialplan_app_data: '86400' }),
      step(5005, 2, 'ChannelHangupRequest', 'Ring', { cause: 19 }),
      step(5005, 1, 'ChannelDestroyed', 'Ringing', { cause: 19, cause_txt: 'User alerting, no answer' }),
      step(5005, 2, 'ChannelHangupRequest', 'Ring', { cause: 16, soft: true }),
      step(5005, 2, 'ChannelDestroyed', 'Ring', { cause: 19, cause_txt: 'User alerting, no answer' }),
    ],
    recordedTimeoutMs: 5000,
  },
  // congestion_500: Congestion(20)
  congestion: {
    steps: [
      step(3, 1, 'Dial', 'Down', { dialstatus: '' }),
      step(3, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Congestion', dialplan_app_data: '20' }),
      step(3, 2, 'ChannelStateChange', 'Busy'),
      step(3, 1, 'Dial', 'Down', { dialstatus: 'CONGESTION' }),
      step(3, 2, 'ChannelHangupRequest', 'Busy', { cause: 0 }),
      step(3, 2, 'ChannelHangupRequest', 'Busy', { cause: 16, soft: true }),
      step(3, 2, 'ChannelDestroyed', 'Busy', { cause: 34, cause_txt: 'Circuit/channel congestion' }),
      step(3, 1, 'ChannelDestroyed', 'Down', { cause: 0, cause_txt: 'Unknown' }),
    ],
  },
  // rejected_603: Hangup(21)
  rejected: {
    steps: [
      step(2, 1, 'Dial', 'Down', { dialstatus: '' }),
      step(2, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Hangup', dialplan_app_data: '21' }),
      step(2, 2, 'ChannelHangupRequest', 'Ring', { cause: 16, soft: true }),
      step(2, 1, 'ChannelHangupRequest', 'Down', { cause: 21 }),
      step(2, 2, 'ChannelDestroyed', 'Ring', { cause: 21, cause_txt: 'Call Rejected' }),
      step(3, 1, 'Dial', 'Down', { dialstatus: 'NOANSWER' }),
      step(3, 1, 'ChannelDestroyed', 'Down', { cause: 21, cause_txt: 'Call Rejected' }),
    ],
  },
  // unallocated_404: Hangup(1)
  unallocated: {
    steps: [
      step(3, 1, 'Dial', 'Down', { dialstatus: '' }),
      step(3, 2, 'ChannelDialplan', 'Ring', { dialplan_app: 'Hangup', dialplan_app_data: '1' }),
      step(3, 2, 'ChannelHangupRequest', 'Ring', { cause: 16, soft: true }),
      step(3, 1, 'ChannelHangupRequest', 'Down', { cause: 1 }),
      step(3, 2, 'ChannelDestroyed', 'Ring', { cause: 1, cause_txt: 'Unallocated (unassigned) number' }),
      step(3, 1, 'Dial', 'Down', { dialstatus: 'NOANSWER' }),
      step(3, 1, 'ChannelDestroyed', 'Down', { cause: 1, cause_txt: 'Unallocated (unassigned) number' }),
    ],
  },
  // nonexistent_extension_999: the extension is not in the dialplan
  'nonexistent-extension': {
    steps: [
      step(3, 2, 'ChannelDestroyed', 'Ring', { cause: 0, cause_txt: 'Unknown' }),
      step(3, 1, 'ChannelDestroyed', 'Down', { cause: 0, cause_txt: 'Unknown' }),
    ],
  },
}

/** The endpoints the traces were recorded with (dialplan-used-for-traces.conf). */
export const DEFAULT_SCENARIOS: Record<string, FakeAriScenario> = {
  'Local/100@test': 'answered',
  'Local/102@test': 'answered-stays-up',
  'Local/200@test': 'ringing-then-answered',
  'Local/486@test': 'busy',
  'Local/408@test': 'no-answer',
  'Local/500@test': 'congestion',
  'Local/603@test': 'rejected',
  'Local/404@test': 'unallocated',
  'Local/999@test': 'nonexistent-extension',
}

/** Any other technology fails like trace bad_technology. */
const KNOWN_TECHNOLOGIES = new Set(['Local', 'PJSIP', 'SIP', 'IAX2', 'DAHDI'])

/** GET /asterisk/info as recorded. */
const ASTERISK_INFO = {
  build: {
    os: 'Linux',
    kernel: '6.18.44-fc-v669',
    machine: 'x86_64',
    options: 'OPTIONAL_API',
    date: '2026-11-22 01:56:26 UTC',
    user: 'root',
  },
  system: { version: '22.10.1', entity_id: '02:fc:00:00:00:01' },
  config: { name: '', default_language: 'en', setid: { user: '', group: '' } },
  status: { startup_time: '2026-11-22T02:11:59.837+0000', last_reload_time: '2026-11-22T02:11:59.837+0000' },
}
const ASTERISK_ID = ASTERISK_INFO.system.entity_id

// ---------------------------------------------------------------------------------------------------------------
// State

type FakeCall = {
  app: string
  endpoint: string
  args: string[]
  /** Index 0 is the originated channel (`;1`); index 1 the Local peer (`;2`), absent for other technologies. */
  halves: Channel[]
  inStasis: boolean
  hangingUp: boolean
  /** Bumped to cancel whatever sequence is playing for this call. */
  generation: number
  /** Entered from the dialplan: leaves the app with StasisEnd, no ChannelDestroyed. */
  inbound?: boolean
  /** An externalMedia websocket channel: its media endpoint, and whether the app's socket is open. */
  media?: FakeMediaChannel
  mediaSocketOpen?: boolean
}

type FakeBridge = { bridge: Bridge }

type SocketData = { apps: string[]; subscribeAll: boolean } | MediaSocketData

/** `params` are the pattern's groups, URL-decoded. */
type Handler = (ctx: { params: string[]; query: URLSearchParams }) => Response | Promise<Response>

export async function startFakeAri(options: FakeAriOptions = {}): Promise<FakeAri> {
  const timeScale = options.timeScale ?? 0.001
  const responseLagMs = options.responseLagMs ?? 3
  const scenarios = { ...DEFAULT_SCENARIOS, ...options.scenarios }
  const defaultScenario = options.defaultScenario ?? 'answered'
  let credentials = { username: options.username ?? 'ariuser', password: options.password ?? 'aripass' }

  const requests: RecordedRequest[] = []
  const channels = new Map<string, { channel: Channel; call: FakeCall }>()
  const bridges = new Map<string, FakeBridge>()
  const playbacks = new Map<string, { playback: Playback; app: string }>()
  /** The latest socket registered per app gets its events, as in Asterisk. */
  const appSockets = new Map<string, ServerWebSocket<SocketData>>()
  /** Apps whose current socket asked for subscribeAll. */
  const subscribedToAll = new Set<string>()
  /** Per app ever registered: its event sources (`channel:<id>`, `bridge:<id>`) other than being in Stasis. */
  const subscriptions = new Map<string, Set<string>>()
  const sockets = new Set<ServerWebSocket<SocketData>>()
  const mediaHub = createFakeMediaHub()
  let channelCounter = 0
  let closed = false

  // -- events ---------------------------------------------------------------------------------------------------

  function send(app: string, event: { type: string; [field: string]: unknown }) {
    const full = { timestamp: asteriskTime(), asterisk_id: ASTERISK_ID, application: app, ...event }
    appSockets.get(app)?.send(JSON.stringify(full))
  }

  function subscribe(app: string, source: string) {
    const sources = subscriptions.get(app) ?? new Set()
    subscriptions.set(app, sources.add(source))
  }

  /** The apps subscribed to a channel: explicitly (or by originate), by having it in Stasis, or to everything. */
  function channelAudience(channel: Channel, call: FakeCall): Set<string> {
    const audience = new Set(subscribedToAll)
    if (call.inStasis && call.halves[0] === channel) audience.add(call.app)
    for (const [app, sources] of subscriptions) if (sources.has(`channel:${channel.id}`)) audience.add(app)
    return audience
  }

  function sendAboutChannel(channel: Channel, call: FakeCall, event: { type: string; [field: string]: unknown }) {
    for (const app of channelAudience(channel, call)) send(app, event)
  }

  /** For a channel entering or leaving a bridge: its own audience, and the apps subscribed to the bridge or in it. */
  function bridgeAudience(bridge: Bridge, channel: Channel, call: FakeCall): Set<string> {
    const audience = channelAudience(channel, call)
    for (const [app, sources] of subscriptions) if (sources.has(`bridge:${bridge.id}`)) audience.add(app)
    for (const id of bridge.channels) {
      const member = channels.get(id)
      if (member?.call.inStasis && member.call.halves[0] === member.channel) audience.add(member.call.app)
    }
    return audience
  }

  /** Asterisk drops every subscription to a destroyed channel. */
  function forgetChannel(channelId: string) {
    for (const sources of subscriptions.values()) sources.delete(`channel:${channelId}`)
  }

  function apply(call: FakeCall, s: Step) {
    const channel = call.halves[s.half - 1]
    if (!channel || !channels.has(channel.id)) return
    if (s.state) channel.state = s.state
    if (s.type === 'ChannelDialplan') {
      channel.dialplan = {
        ...channel.dialplan,
        priority: channel.dialplan.app_name ? channel.dialplan.priority + 1 : 1,
        app_name: String(s.fields?.dialplan_app),
        app_data: String(s.fields?.dialplan_app_data),
      }
    }
    if (s.type === 'StasisStart') {
      call.inStasis = true
      channel.dialplan = { ...channel.dialplan, app_name: 'Stasis', app_data: [call.app, ...call.args].join(',') }
    }
    if (s.type === 'StasisEnd') call.inStasis = false
    const gone = s.type === 'ChannelDestroyed' || (s.type === 'StasisEnd' && call.inbound)
    if (gone) leaveBridges(channel, call)
    const snapshot = structuredClone(channel)
    const event =
      s.type === 'Dial'
        ? {
            type: s.type,
            ...s.fields,
            forward: '',
            dialstring: call.endpoint.slice(call.endpoint.indexOf('/') + 1),
            peer: snapshot,
          }
        : { type: s.type, ...s.fields, channel: snapshot, ...(s.type === 'StasisStart' ? { args: call.args } : {}) }
    if (s.type === 'StasisStart' || s.type === 'StasisEnd') send(call.app, event)
    else sendAboutChannel(channel, call, event)
    if (!gone) return
    // An inbound channel is destroyed after it left the app: only apps that subscribed to it hear of that.
    if (s.type === 'StasisEnd')
      sendAboutChannel(channel, call, {
        type: 'ChannelDestroyed',
        cause: 16,
        cause_txt: 'Normal Clearing',
        channel: snapshot,
      })
    channels.delete(channel.id)
    forgetChannel(channel.id)
  }

  /** Plays steps on their scaled offsets from now; stops when the call's generation moves on. */
  async function play(call: FakeCall, steps: Step[]) {
    const generation = call.generation
    const startedAt = performance.now()
    for (const s of steps) {
      const waitMs = startedAt + s.at * timeScale - performance.now()
      if (waitMs >= 1) await Bun.sleep(waitMs)
      if (closed || call.generation !== generation) return
      apply(call, s)
    }
  }

  /** Ends a call with a hangup sequence; StasisEnd bookkeeping only if the channel is in the app. */
  function endCall(call: FakeCall, template: Step[]) {
    call.generation += 1
    call.hangingUp = true
    void play(call, call.inStasis ? template : template.filter((s) => !isStasisBookkeeping(s)))
  }

  function leaveBridges(channel: Channel, call: FakeCall) {
    for (const { bridge } of bridges.values()) {
      if (!bridge.channels.includes(channel.id)) continue
      const audience = bridgeAudience(bridge, channel, call)
      bridge.channels = bridge.channels.filter((id) => id !== channel.id)
      const event = { type: 'ChannelLeftBridge', bridge: structuredClone(bridge), channel: structuredClone(channel) }
      for (const app of audience) send(app, event)
    }
  }

  // -- REST -----------------------------------------------------------------------------------------------------

  /** Asterisk-style unique id, `<epoch seconds>.<counter>`, for channels the client did not name. */
  function nextUniqueId(): string {
    channelCounter += 1
    return `${Math.floor(Date.now() / 1000)}.${channelCounter}`
  }

  /** Asterisk's channel name counter: the `00000008` of `Local/100@test-00000008;1`. */
  function nextNameSuffix(): string {
    channelCounter += 1
    return channelCounter.toString(16).padStart(8, '0')
  }

  function addCall(app: string, endpoint: string, args: string[], halves: Channel[]): FakeCall {
    const call: FakeCall = { app, endpoint, args, halves, inStasis: false, hangingUp: false, generation: 0 }
    for (const channel of halves) channels.set(channel.id, { channel, call })
    return call
  }

  function newChannel(id: string, name: string, endpoint: string, caller: CallerId): Channel {
    const local = endpoint.match(/^Local\/([^@]+)@([^/]+)/)
    return {
      id,
      name,
      state: 'Down',
      protocol_id: '',
      caller: { ...caller },
      connected: { ...caller },
      accountcode: '',
      dialplan: { context: local?.[2] ?? 'default', exten: local?.[1] ?? 's', priority: 1, app_name: '', app_data: '' },
      creationtime: asteriskTime(),
      language: 'en',
    }
  }

  async function originate(query: URLSearchParams, pathChannelId?: string): Promise<Response> {
    const endpoint = query.get('endpoint')
    const app = query.get('app')
    if (!endpoint) return message(400, 'Endpoint must be specified')
    if (!app) return message(400, 'Application or extension must be specified')
    const technology = endpoint.split('/')[0]
    if (!KNOWN_TECHNOLOGIES.has(technology)) return Response.json({ error: 'Allocation failed' }, { status: 500 })
    const chosenId = pathChannelId ?? query.get('channelId') ?? undefined
    if (chosenId && channels.has(chosenId)) return duplicateChannelId()

    const isLocal = technology === 'Local'
    const baseName = `${endpoint}-${nextNameSuffix()}`
    const caller = parseCallerId(query.get('callerId'))
    const halves = [newChannel(chosenId ?? nextUniqueId(), isLocal ? `${baseName};1` : baseName, endpoint, caller)]
    halves[0].dialplan = { ...halves[0].dialplan, app_name: 'AppDial2', app_data: '(Outgoing Line)' }
    if (isLocal) {
      const peerId = query.get('otherChannelId') ?? (chosenId ? `${chosenId};2` : nextUniqueId())
      halves.push(newChannel(peerId, `${baseName};2`, endpoint, caller))
      halves[1].state = 'Ring'
    }
    const call = addCall(app, endpoint, splitArgs(query.get('appArgs')), halves)
    for (const channel of halves) subscribe(app, `channel:${channel.id}`)
    const response = structuredClone(halves[0])
    void play(call, scriptedSteps(SCRIPTS[scenarios[endpoint] ?? defaultScenario], Number(query.get('timeout') ?? 30)))
    await Bun.sleep(responseLagMs)
    return Response.json(response)
  }

  function hangupChannel(channelId: string, template: Step[]): boolean {
    const entry = channels.get(channelId)
    if (!entry) return false
    const { call } = entry
    if (call.hangingUp) return true
    if (call.media) {
      call.hangingUp = true
      if (call.mediaSocketOpen) call.media.hangup()
      else void play(call, MEDIA_HANGUP)
      return true
    }
    endCall(call, call.inbound ? (template === APP_HANGUP ? INBOUND_APP_HANGUP : INBOUND_CALLER_HANGUP) : template)
    return true
  }

  /** media-traces.json: a Down channel whose socket the app must open; Up and in the app once it did. */
  function websocketMedia(app: string, chosenId: string | null): Channel {
    const name = `WebSocket/INCOMING/0x${(0x7ff914000000 + channelCounter * 0x1000).toString(16)}`
    const channel = newChannel(chosenId ?? nextUniqueId(), name, 'WebSocket/INCOMING', { name: '', number: '' })
    const media = mediaHub.addChannel({ channelId: channel.id, channelName: name })
    channel.channelvars = {
      MEDIA_WEBSOCKET_CONNECTION_ID: media.connectionId,
      MEDIA_WEBSOCKET_OPTIMAL_FRAME_SIZE: '160',
    }
    const call = addCall(app, 'WebSocket/INCOMING', [], [channel])
    subscribe(app, `channel:${channel.id}`)
    call.media = media
    void media.connected.then(() => {
      call.mediaSocketOpen = true
      if (closed || !channels.has(channel.id)) return
      channel.state = 'Up'
      sendAboutChannel(channel, call, { type: 'ChannelStateChange', channel: structuredClone(channel) })
      apply(call, step(0, 1, 'ChannelVarset', 'Up', { variable: 'STASISSTATUS', value: '' }))
      apply(call, step(0, 1, 'StasisStart', 'Up'))
    })
    void media.closed.then(() => {
      call.mediaSocketOpen = false
      if (closed || !channels.has(channel.id)) return
      call.hangingUp = true
      void play(call, MEDIA_HANGUP)
    })
    return channel
  }

  async function externalMedia(query: URLSearchParams): Promise<Response> {
    const app = query.get('app')
    const format = query.get('format')
    if (!app || !format) return message(400, 'app and format are required')
    const chosenId = query.get('channelId')
    if (chosenId && channels.has(chosenId)) return duplicateChannelId()
    if (query.get('transport') === 'websocket' && query.get('connection_type') === 'server') {
      const response = structuredClone(websocketMedia(app, chosenId))
      await Bun.sleep(responseLagMs)
      return Response.json(response)
    }
    const technology = query.get('transport') === 'websocket' ? 'WebSocket' : 'UnicastRTP'
    const endpoint = `${technology}/${query.get('external_host') ?? 'media'}`
    const channel = newChannel(chosenId ?? nextUniqueId(), `${endpoint}-${nextNameSuffix()}`, endpoint, {
      name: '',
      number: '',
    })
    channel.state = 'Up'
    const call = addCall(app, endpoint, [], [channel])
    subscribe(app, `channel:${channel.id}`)
    const response = structuredClone(channel)
    apply(call, step(0, 1, 'StasisStart', 'Up'))
    await Bun.sleep(responseLagMs)
    return Response.json(response)
  }

  const routes: [method: string, path: RegExp, handler: Handler][] = [
    ['GET', /^\/asterisk\/info$/, () => Response.json(ASTERISK_INFO)],
    [
      'GET',
      /^\/asterisk\/ping$/,
      () => Response.json({ ping: 'pong', timestamp: asteriskTime(), asterisk_id: ASTERISK_ID }),
    ],
    ['GET', /^\/channels$/, () => Response.json([...channels.values()].map(({ channel }) => channel))],
    ['POST', /^\/channels$/, ({ query }) => originate(query)],
    ['POST', /^\/channels\/externalMedia$/, ({ query }) => externalMedia(query)],
    ['POST', /^\/channels\/([^/]+)$/, ({ params, query }) => originate(query, params[0])],
    [
      'GET',
      /^\/channels\/([^/]+)$/,
      ({ params }) => {
        const entry = channels.get(params[0])
        return entry ? Response.json(entry.channel) : message(404, 'Channel not found')
      },
    ],
    [
      'DELETE',
      /^\/channels\/([^/]+)$/,
      ({ params }) => {
        const entry = channels.get(params[0])
        if (!entry) return message(404, 'Channel not found')
        // the 204 goes out before the hangup events, as recorded
        setTimeout(() => hangupChannel(entry.channel.id, APP_HANGUP), 0)
        return new Response(null, { status: 204 })
      },
    ],
    [
      'POST',
      /^\/channels\/([^/]+)\/answer$/,
      ({ params }) => {
        const entry = channels.get(params[0])
        if (!entry) return message(404, 'Channel not found')
        if (!entry.call.inStasis) return message(409, 'Channel not in Stasis application')
        if (entry.channel.state !== 'Up') {
          entry.channel.state = 'Up'
          sendAboutChannel(entry.channel, entry.call, {
            type: 'ChannelStateChange',
            channel: structuredClone(entry.channel),
          })
        }
        return new Response(null, { status: 204 })
      },
    ],
    ['GET', /^\/applications\/([^/]+)$/, ({ params }) => application(params[0])],
    [
      'POST',
      /^\/applications\/([^/]+)\/subscription$/,
      ({ params, query }) => changeSubscription(params[0], query, 'add'),
    ],
    [
      'DELETE',
      /^\/applications\/([^/]+)\/subscription$/,
      ({ params, query }) => changeSubscription(params[0], query, 'remove'),
    ],
    ['GET', /^\/bridges$/, () => Response.json([...bridges.values()].map(({ bridge }) => bridge))],
    ['POST', /^\/bridges$/, ({ query }) => createBridge(query, query.get('bridgeId'))],
    ['POST', /^\/bridges\/([^/]+)$/, ({ params, query }) => createBridge(query, params[0])],
    [
      'GET',
      /^\/bridges\/([^/]+)$/,
      ({ params }) => {
        const found = bridges.get(params[0])
        return found ? Response.json(found.bridge) : message(404, 'Bridge not found')
      },
    ],
    ['POST', /^\/bridges\/([^/]+)\/addChannel$/, ({ params, query }) => addChannels(params[0], query)],
    ['DELETE', /^\/bridges\/([^/]+)$/, ({ params }) => destroyBridge(params[0])],
    ['POST', /^\/bridges\/([^/]+)\/removeChannel$/, ({ params, query }) => removeChannels(params[0], query)],
    ['POST', /^\/bridges\/([^/]+)\/play$/, ({ params, query }) => playOnBridge(params[0], query)],
    [
      'DELETE',
      /^\/playbacks\/([^/]+)$/,
      ({ params }) => {
        const found = playbacks.get(params[0])
        if (!found) return message(404, 'Playback not found')
        finishPlayback(found.playback.id, 'done')
        return new Response(null, { status: 204 })
      },
    ],
  ]

  /** GET /applications/{app}, as recorded (connect, ws_edge_cases multi_app_subscribeAll, ws_disconnect_reconnect). */
  function application(app: string): Response {
    const sources = subscriptions.get(app)
    if (!sources) return message(404, 'Application does not exist.')
    const all = subscribedToAll.has(app)
    const ids = (kind: string) =>
      [...sources].filter((source) => source.startsWith(`${kind}:`)).map((source) => source.slice(kind.length + 1))
    const inStasis = [...channels.values()]
      .filter(
        ({ channel, call }) =>
          call.app === app && call.inStasis && call.halves[0] === channel && !sources.has(`channel:${channel.id}`),
      )
      .map(({ channel }) => channel.id)
    return Response.json({
      name: app,
      channel_ids: all ? ['__AST_CHANNEL_ALL_TOPIC'] : [...ids('channel'), ...inStasis],
      bridge_ids: all ? ['__AST_BRIDGE_ALL_TOPIC'] : ids('bridge'),
      endpoint_ids: all ? ['__AST_ENDPOINT_ALL_TOPIC'] : [],
      device_names: all ? ['__AST_DEVICE_STATE_ALL_TOPIC'] : [],
      events_allowed: [],
      events_disallowed: [],
    })
  }

  /** POST / DELETE /applications/{app}/subscription (applications.json): channel and bridge sources. */
  function changeSubscription(app: string, query: URLSearchParams, change: 'add' | 'remove'): Response {
    const requested = (query.get('eventSource') ?? '').split(',').filter(Boolean)
    if (requested.length === 0) return message(400, 'Missing parameter eventSource')
    const sources = subscriptions.get(app)
    if (!sources) return message(404, 'Application does not exist.')
    for (const source of requested) {
      const [scheme, id] = [source.slice(0, source.indexOf(':')), source.slice(source.indexOf(':') + 1)]
      if (scheme !== 'channel' && scheme !== 'bridge') return message(400, `Invalid event source URI scheme: ${source}`)
      if (!(scheme === 'channel' ? channels.has(id) : bridges.has(id)))
        return message(422, `Event source does not exist: ${source}`)
      if (change === 'remove' && !sources.has(source))
        return message(409, `Application not subscribed to event source: ${source}`)
    }
    for (const source of requested) {
      if (change === 'add') sources.add(source)
      else sources.delete(source)
    }
    return application(app)
  }

  function createBridge(query: URLSearchParams, bridgeId: string | null): Response {
    const id = bridgeId ?? crypto.randomUUID()
    if (bridges.has(id)) return message(409, 'Bridge with the same bridgeId already exists')
    const bridge: Bridge = {
      id,
      technology: 'simple_bridge',
      bridge_type: query.get('type') === 'holding' ? 'holding' : 'mixing',
      bridge_class: 'stasis',
      creator: 'Stasis',
      name: query.get('name') ?? '',
      channels: [],
      creationtime: asteriskTime(),
      video_mode: 'talker',
    }
    bridges.set(id, { bridge })
    return Response.json(bridge)
  }

  /** As in trace bridge_two_channels: ChannelEnteredBridge per channel, then BRIDGEPEER on both of a pair. */
  function addChannels(bridgeId: string, query: URLSearchParams): Response {
    const found = bridges.get(bridgeId)
    if (!found) return message(404, 'Bridge not found')
    const entries = (query.get('channel') ?? '').split(',').map((id) => channels.get(id))
    if (entries.some((entry) => !entry)) return message(400, 'Channel not found')
    if (entries.some((entry) => !entry!.call.inStasis)) return message(422, 'Channel not in Stasis application')
    const { bridge } = found
    for (const { channel, call } of entries as NonNullable<(typeof entries)[number]>[]) {
      bridge.channels.push(channel.id)
      const event = { type: 'ChannelEnteredBridge', bridge: structuredClone(bridge), channel: structuredClone(channel) }
      for (const app of bridgeAudience(bridge, channel, call)) send(app, event)
    }
    setBridgePeers(bridge, (peer) => peer.name)
    return new Response(null, { status: 204 })
  }

  function removeChannels(bridgeId: string, query: URLSearchParams): Response {
    const found = bridges.get(bridgeId)
    if (!found) return message(404, 'Bridge not found')
    const ids = (query.get('channel') ?? '').split(',')
    if (ids.some((id) => !channels.has(id))) return message(400, 'Channel not found')
    if (ids.some((id) => !found.bridge.channels.includes(id))) return message(422, 'Channel not in this bridge')
    for (const id of ids) {
      const { channel, call } = channels.get(id)!
      leaveBridges(channel, call)
    }
    return new Response(null, { status: 204 })
  }

  /** 201 with the queued playback, then PlaybackStarted; a `tone:` plays until stopped, other media for 2 s (scaled). */
  function playOnBridge(bridgeId: string, query: URLSearchParams): Response {
    if (!bridges.has(bridgeId)) return message(404, 'Bridge not found')
    const media = query.get('media')
    if (!media) return message(400, 'media is required')
    const id = query.get('playbackId') ?? crypto.randomUUID()
    const playback: Playback = {
      id,
      media_uri: media,
      target_uri: `bridge:${bridgeId}`,
      language: 'en',
      state: 'queued',
    }
    const app = [...appSockets.keys()][0] ?? ''
    playbacks.set(id, { playback, app })
    setTimeout(() => {
      if (!playbacks.has(id)) return
      send(app, { type: 'PlaybackStarted', playback: { ...playback, state: 'playing' } })
      if (!media.startsWith('tone:')) setTimeout(() => finishPlayback(id, 'done'), 2000 * timeScale)
    }, 0)
    return Response.json(playback, { status: 201 })
  }

  function finishPlayback(id: string, state: 'done' | 'failed') {
    const found = playbacks.get(id)
    if (!found) return
    playbacks.delete(id)
    send(found.app, { type: 'PlaybackFinished', playback: { ...found.playback, state } })
  }

  function setBridgePeers(bridge: Bridge, value: (peer: Channel) => string) {
    if (bridge.channels.length !== 2) return
    const pair = bridge.channels.map((id) => channels.get(id)!)
    pair.forEach((entry, index) =>
      sendAboutChannel(entry.channel, entry.call, {
        type: 'ChannelVarset',
        variable: 'BRIDGEPEER',
        value: value(pair[1 - index].channel),
        channel: structuredClone(entry.channel),
      }),
    )
  }

  /** As in trace bridge_two_channels: BRIDGEPEER cleared, then ChannelLeftBridge per channel. */
  function destroyBridge(bridgeId: string): Response {
    const found = bridges.get(bridgeId)
    if (!found) return message(404, 'Bridge not found')
    const { bridge } = found
    setBridgePeers(bridge, () => '')
    for (const id of [...bridge.channels]) {
      const entry = channels.get(id)!
      leaveBridges(entry.channel, entry.call)
    }
    bridges.delete(bridgeId)
    return new Response(null, { status: 204 })
  }

  function broadcast(event: { type: string; [field: string]: unknown }) {
    for (const app of appSockets.keys()) send(app, event)
  }

  // -- HTTP server ----------------------------------------------------------------------------------------------

  function authorized(request: Request, query: URLSearchParams): boolean {
    const header = request.headers.get('authorization')
    const expected = `${credentials.username}:${credentials.password}`
    if (header?.startsWith('Basic ')) return Buffer.from(header.slice(6), 'base64').toString('utf8') === expected
    return query.get('api_key') === expected
  }

  async function handle(request: Request, server: Server<SocketData>): Promise<Response | undefined> {
    const url = new URL(request.url)
    // chan_websocket's media path: no credentials, the connection id admits the app (as traced)
    if (options.refuseMediaSockets && url.pathname.startsWith('/media/')) return message(404, 'Not Found')
    const media = mediaHub.upgrade(request, server as Server<MediaSocketData>)
    if (media !== null) return media
    const body = request.headers.get('content-type')?.includes('json')
      ? await request.json().catch(() => null)
      : undefined
    requests.push({ method: request.method, path: url.pathname, query: Object.fromEntries(url.searchParams), body })
    if (!url.pathname.startsWith('/ari/')) return message(404, 'Resource not found')
    if (!authorized(request, url.searchParams)) return message(401, 'Authentication required')
    const path = url.pathname.slice('/ari'.length)
    if (path === '/events') {
      const apps = url.searchParams.get('app')?.split(',').filter(Boolean) ?? []
      if (apps.length === 0)
        return new Response(MISSING_APP_PAGE, { status: 400, headers: { 'content-type': 'text/html' } })
      const subscribeAll = url.searchParams.get('subscribeAll') === 'true'
      return server.upgrade(request, { data: { apps, subscribeAll } })
        ? undefined
        : message(400, 'Expected a websocket upgrade')
    }
    for (const [method, pattern, handler] of routes) {
      const match = path.match(pattern)
      if (!match || method !== request.method) continue
      return handler({ params: match.slice(1).map(decodeURIComponent), query: url.searchParams })
    }
    return message(404, 'Resource not found')
  }

  const serveOptions = {
    hostname: '127.0.0.1',
    fetch: handle,
    websocket: {
      data: {} as SocketData,
      // Asterisk never pings and never times out an idle socket.
      sendPings: false,
      idleTimeout: 0,
      open(ws: ServerWebSocket<SocketData>) {
        if (!('apps' in ws.data)) return mediaHub.websocket.open(ws as ServerWebSocket<MediaSocketData>)
        sockets.add(ws)
        for (const app of ws.data.apps) {
          const previous = appSockets.get(app)
          // trace application_replaced: the old socket is told, and stays open
          previous?.send(
            JSON.stringify({
              type: 'ApplicationReplaced',
              timestamp: asteriskTime(),
              application: app,
              asterisk_id: ASTERISK_ID,
            }),
          )
          appSockets.set(app, ws)
          if (!subscriptions.has(app)) subscriptions.set(app, new Set())
          if (ws.data.subscribeAll) subscribedToAll.add(app)
          else subscribedToAll.delete(app)
        }
      },
      message(ws: ServerWebSocket<SocketData>, data: string | Buffer) {
        if (!('apps' in ws.data)) mediaHub.websocket.message(ws as ServerWebSocket<MediaSocketData>, data)
      },
      close(ws: ServerWebSocket<SocketData>, code: number, reason: string) {
        if (!('apps' in ws.data)) return mediaHub.websocket.close(ws as ServerWebSocket<MediaSocketData>, code, reason)
        sockets.delete(ws)
        for (const app of ws.data.apps) {
          if (appSockets.get(app) !== ws) continue
          appSockets.delete(app)
          subscribedToAll.delete(app)
        }
      },
    },
  }
  let server: Server<SocketData> = Bun.serve<SocketData>({ ...serveOptions, port: 0 })
  const port = server.port

  return {
    url: `http://127.0.0.1:${port}`,
    settings: (app = 'testapp') => ({ endpoint: `http://127.0.0.1:${port}`, ...credentials, app }),
    requests,
    get socketCount() {
      return sockets.size
    },
    liveChannelIds: () => [...channels.keys()],
    bridgeIds: () => [...bridges.keys()],
    dropSockets: () => {
      for (const ws of sockets) ws.terminate()
    },
    freezeSockets: () => {
      for (const ws of sockets) ws.pause()
    },
    async refuseConnections(on) {
      if (on) await server.stop(true)
      else server = Bun.serve<SocketData>({ ...serveOptions, port })
    },
    setCredentials(username, password) {
      credentials = { username, password }
    },
    emit(event, app) {
      if (app) send(app, event)
      else broadcast(event)
    },
    hangup(channelId) {
      if (!hangupChannel(channelId, FAR_END_HANGUP)) throw new Error(`fake ARI: no live channel ${channelId}`)
    },
    playingIds: () => [...playbacks.keys()],
    bridgeChannels: (bridgeId) => (bridges.has(bridgeId) ? [...bridges.get(bridgeId)!.bridge.channels] : undefined),
    inboundCall({ exten, callerNumber = '', app = [...appSockets.keys()][0] }) {
      if (!app) throw new Error('fake ARI: no app connected to call into')
      const endpoint = `Local/${exten}@stasis`
      const channel = newChannel(nextUniqueId(), `${endpoint}-${nextNameSuffix()};2`, endpoint, {
        name: '',
        number: callerNumber,
      })
      channel.state = 'Ring'
      channel.dialplan = { context: 'stasis', exten, priority: 2, app_name: 'Stasis', app_data: `${app},${exten}` }
      const call = addCall(app, endpoint, [exten], [channel])
      call.inbound = true
      apply(call, step(0, 1, 'StasisStart', 'Ring'))
      return channel.id
    },
    dtmf(channelId, digit) {
      const entry = channels.get(channelId)
      if (!entry) throw new Error(`fake ARI: no live channel ${channelId}`)
      sendAboutChannel(entry.channel, entry.call, {
        type: 'ChannelDtmfReceived',
        digit,
        duration_ms: 100,
        channel: structuredClone(entry.channel),
      })
    },
    mediaOf(channelId) {
      const bridge = [...bridges.values()].find(({ bridge }) => bridge.channels.includes(channelId))?.bridge
      return bridge?.channels.map((id) => channels.get(id)?.call.media).find((media) => media !== undefined)
    },
    async close() {
      closed = true
      mediaHub.stop()
      await server.stop(true)
    },
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/** Trace missing_app: Asterisk answers an upgrade without app= with an HTML page. */
const MISSING_APP_PAGE =
  '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\r\n<html><head>\r\n<title>400 Bad Request</title>\r\n' +
  '</head><body>\r\n<h1>Bad Request</h1>\r\n<p>HTTP request is missing param: [app]</p>\r\n<hr />\r\n' +
  '<address>Asterisk</address>\r\n</body></html>\r\n'

function message(status: number, text: string): Response {
  return Response.json({ message: text }, { status })
}

/** The scenario's steps, its no-answer moved to the originate timeout, its far-end hangup appended. */
function scriptedSteps(script: Script, timeoutSeconds: number): Step[] {
  const { recordedTimeoutMs, farEndHangupAt } = script
  const steps =
    recordedTimeoutMs === undefined
      ? script.steps
      : script.steps.map((s) =>
          s.at >= recordedTimeoutMs ? { ...s, at: s.at - recordedTimeoutMs + timeoutSeconds * 1000 } : s,
        )
  if (farEndHangupAt === undefined) return steps
  return [...steps, ...FAR_END_HANGUP.map((s) => ({ ...s, at: s.at + farEndHangupAt }))]
}

/** Swagger: "Channel with given unique ID already exists." (not in the traces). */
function duplicateChannelId(): Response {
  return message(409, 'Channel with given unique ID already exists')
}

function isStasisBookkeeping(s: Step): boolean {
  return s.type === 'StasisEnd' || (s.type === 'ChannelVarset' && s.fields?.variable === 'STASISSTATUS')
}

/** Asterisk's timestamp format: `2026-11-22T02:12:01.520+0000`. */
function asteriskTime(date = new Date()): string {
  return date.toISOString().replace('Z', '+0000')
}

function splitArgs(appArgs: string | null): string[] {
  return appArgs ? appArgs.split(',') : []
}

/** `"Name" <number>` or a bare number. */
function parseCallerId(callerId: string | null): CallerId {
  const named = callerId?.match(/^\s*"?([^"<]*?)"?\s*<([^>]*)>\s*$/)
  if (named) return { name: named[1], number: named[2] }
  return { name: '', number: callerId?.trim() ?? '' }
}
