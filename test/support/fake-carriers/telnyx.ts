import { generateKeyPairSync, sign } from 'node:crypto'
import { connectMedia, createPlayback, type FakeServer, type MediaClient, startFakeServer } from './shared'

/**
 * A fake Telnyx Call Control built from its public documentation: `POST /v2/calls` (Bearer API key; `data.call_control_id`),
 * the hangup / answer / reject commands and `GET /v2/calls/{id}` (`is_alive`), JSON event webhooks (`call.initiated`,
 * `call.answered`, `call.machine.detection.ended`, `call.hangup` with `hangup_cause`) signed with Ed25519 over
 * "<telnyx-timestamp>|<body>" (headers telnyx-signature-ed25519, telnyx-timestamp), and the media stream
 * (connected, start, media with base64 PCMU RTP payloads, stop) opened to `stream_url` when the call is answered.
 * `actions/transfer` rings `to` (from `from`, else the call's own number) as the test's `transfer` plan says, with the
 * new leg's events (call.initiated, then call.answered and call.bridged, or call.hangup with the failure's cause) sent
 * to the command's webhook_url. That URL overrides the one "for which Telnyx will send subsequent webhooks to for this
 * call" (the transfer command in Telnyx's Call Control OpenAPI / telnyx-node), so the caller's own events go there too:
 * its call.bridged when the destination answers, its call.hangup when it ends. The caller's call and stream stay as they
 * are meanwhile. An answered destination hangs up with `endTransfer`, which ends the caller's call too.
 */

export type TelnyxOutcome = 'answered' | 'user_busy' | 'timeout' | 'call_rejected' | 'originator_cancel'

export type TelnyxCallPlan =
  | 'hold'
  | { outcome: TelnyxOutcome; machine?: boolean; talk?: (media: MediaClient) => Promise<void> }

export type FakeTelnyxCall = {
  id: string
  body: Record<string, any>
  alive: boolean
  direction: 'incoming' | 'outgoing'
  /** Where its events go: the dial's webhook_url, or the connection's URL for inbound calls. */
  webhookUrl: string
  media?: MediaClient
  commands: string[]
  /** What the caller does on the stream of an answered inbound call. */
  talk?: (media: MediaClient) => Promise<void>
}

/** `ringing`: the destination rings until the test ends the call; else the leg answers, or hangs up with that cause. */
export type TelnyxTransferPlan =
  | 'answered'
  | 'ringing'
  | 'user_busy'
  | 'timeout'
  | 'call_rejected'
  | 'unspecified'
  | 'normal_temporary_failure'

export type FakeTelnyx = FakeServer & {
  apiKey: string
  /** Base64 of the raw Ed25519 public key: the configuration's webhook_public_key. */
  publicKey: string
  calls: Map<string, FakeTelnyxCall>
  /** Sends an event webhook, signed (or with the given headers) at the given time (seconds; default the app's clock). */
  event(
    url: string,
    eventType: string,
    payload: Record<string, unknown>,
    options?: { at?: number; headers?: Record<string, string> },
  ): Promise<Response>
  play(id: string, plan: Exclude<TelnyxCallPlan, 'hold'>): Promise<FakeTelnyxCall>
  /** An inbound call to `to`, announced with call.initiated to the connection's webhook URL. */
  offer(
    connectionUrl: string,
    from: string,
    to: string,
    talk?: (media: MediaClient) => Promise<void>,
  ): Promise<{ call: FakeTelnyxCall; response: Response }>
  idle(): Promise<void>
  failNext(status: number, body: unknown): void
  /** The answered destination of the call's transfer hangs up: the bridge ends, and the caller's call with it. */
  endTransfer(id: string): Promise<void>
}

export function startFakeTelnyx(options: {
  reach: (url: string) => string
  /** The app's clock (ms): webhook timestamps follow it. */
  now: () => number
  plan?: (call: FakeTelnyxCall) => TelnyxCallPlan
  transfer?: (call: FakeTelnyxCall) => TelnyxTransferPlan
}): FakeTelnyx {
  const apiKey = 'KEYtelnyx-api-key-0001'
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const publicKeyBase64 = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
  const calls = new Map<string, FakeTelnyxCall>()
  const { track, idle } = createPlayback()
  let failure: { status: number; body: unknown } | null = null
  let sequence = 0

  async function event(
    url: string,
    eventType: string,
    payload: Record<string, unknown>,
    eventOptions: { at?: number; headers?: Record<string, string> } = {},
  ) {
    const body = JSON.stringify({
      data: {
        record_type: 'event',
        event_type: eventType,
        id: crypto.randomUUID(),
        occurred_at: new Date(options.now()).toISOString(),
        payload,
      },
      meta: { attempt: 1, delivered_to: url },
    })
    const timestamp = String(eventOptions.at ?? Math.floor(options.now() / 1000))
    const signature = sign(null, Buffer.from(`${timestamp}|${body}`), privateKey).toString('base64')
    return fetch(options.reach(url), {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'telnyx-signature-ed25519': signature,
        'telnyx-timestamp': timestamp,
        ...eventOptions.headers,
      },
    })
  }

  const payloadOf = (call: FakeTelnyxCall, extra: Record<string, unknown> = {}) => ({
    call_control_id: call.id,
    call_leg_id: `leg-${call.id}`,
    call_session_id: `session-${call.id}`,
    connection_id: call.body.connection_id ?? 'conn-inbound',
    from: call.body.from,
    to: call.body.to,
    direction: call.direction,
    ...extra,
  })
  const send = (call: FakeTelnyxCall, eventType: string, extra?: Record<string, unknown>) =>
    event(call.webhookUrl, eventType, payloadOf(call, extra))

  async function hangup(call: FakeTelnyxCall, cause: string) {
    if (!call.alive) return
    call.alive = false
    call.media?.close(1000)
    await send(call, 'call.hangup', { hangup_cause: cause, hangup_source: 'callee', state: 'hangup' })
  }

  async function openStream(call: FakeTelnyxCall, streamUrl: string, talk?: (media: MediaClient) => Promise<void>) {
    const media = connectMedia(options.reach(streamUrl))
    call.media = media
    await media.opened
    const streamId = `stream-${call.id}`
    media.send({ event: 'connected', version: '1.0.0' })
    media.send({
      event: 'start',
      sequence_number: '1',
      stream_id: streamId,
      start: {
        call_control_id: call.id,
        call_session_id: `session-${call.id}`,
        from: call.body.from,
        to: call.body.to,
        media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
      },
    })
    await talk?.(media)
    if (call.alive)
      media.send({ event: 'stop', sequence_number: '99', stream_id: streamId, stop: { call_control_id: call.id } })
  }

  async function play(id: string, plan: Exclude<TelnyxCallPlan, 'hold'>): Promise<FakeTelnyxCall> {
    const call = calls.get(id)!
    await send(call, 'call.initiated', { state: 'bridging' })
    if (plan.outcome !== 'answered') {
      call.alive = false
      await send(call, 'call.hangup', {
        hangup_cause: plan.outcome,
        hangup_source: plan.outcome === 'originator_cancel' ? 'caller' : 'callee',
      })
      return call
    }
    await send(call, 'call.answered', { state: 'answered' })
    if (call.body.answering_machine_detection) {
      await send(call, 'call.machine.detection.ended', { result: plan.machine ? 'machine' : 'human' })
      if (plan.machine) {
        // The app hangs up on machines; give it the time to.
        for (let waited = 0; call.alive && waited < 2_000; waited += 5) await Bun.sleep(5)
        return call
      }
    }
    if (call.body.stream_url) await openStream(call, call.body.stream_url, plan.talk)
    await hangup(call, 'normal_clearing')
    await call.media?.closed
    return call
  }

  /** The transfer's destination leg: its events go to the transfer command's webhook_url. */
  const legs = new Map<string, FakeTelnyxCall>()
  async function transfer(call: FakeTelnyxCall, body: Record<string, any>) {
    const leg: FakeTelnyxCall = {
      id: `${call.id}-transfer`,
      body: { from: body.from ?? call.body.from, to: body.to },
      alive: true,
      direction: 'outgoing',
      webhookUrl: body.webhook_url,
      commands: [],
    }
    legs.set(call.id, leg)
    await send(leg, 'call.initiated', { state: 'bridging' })
    const outcome = options.transfer?.(call) ?? 'user_busy'
    if (outcome === 'ringing') return
    if (outcome !== 'answered') {
      leg.alive = false
      await send(leg, 'call.hangup', { hangup_cause: outcome, hangup_source: 'callee' })
      return
    }
    await send(leg, 'call.answered', { state: 'answered' })
    await send(leg, 'call.bridged', { state: 'bridged' })
    await send(call, 'call.bridged', { state: 'bridged' })
  }

  const server = startFakeServer((request) => {
    if (request.headers.get('authorization') !== `Bearer ${apiKey}`) {
      return Response.json(
        { errors: [{ code: '10009', title: 'Authentication failed', detail: 'The API key is not valid' }] },
        { status: 401 },
      )
    }
    if (request.method === 'POST' && request.path === '/v2/calls') {
      if (failure) {
        const { status, body } = failure
        failure = null
        return Response.json(body, { status })
      }
      const call: FakeTelnyxCall = {
        id: `v3:call-${++sequence}`,
        body: request.body,
        alive: true,
        direction: 'outgoing',
        webhookUrl: request.body.webhook_url,
        commands: [],
      }
      calls.set(call.id, call)
      const plan = options.plan?.(call) ?? 'hold'
      if (plan !== 'hold') track(Bun.sleep(1).then(() => play(call.id, plan)))
      return Response.json({
        data: {
          call_control_id: call.id,
          call_leg_id: `leg-${call.id}`,
          call_session_id: `session-${call.id}`,
          is_alive: false,
          record_type: 'call',
        },
      })
    }
    const command = /^\/v2\/calls\/([^/]+)(?:\/actions\/([a-z_]+))?$/.exec(request.path)
    const call = command ? calls.get(decodeURIComponent(command[1])) : undefined
    if (!command || !call)
      return Response.json({ errors: [{ code: '90018', title: 'Call has already ended' }] }, { status: 422 })
    if (!command[2])
      return Response.json({ data: { call_control_id: call.id, is_alive: call.alive, record_type: 'call' } })
    call.commands.push(command[2])
    if (command[2] === 'hangup') track(hangup(call, 'normal_clearing'))
    if (command[2] === 'transfer') {
      call.webhookUrl = request.body.webhook_url
      track(Bun.sleep(1).then(() => transfer(call, request.body)))
    }
    if (command[2] === 'reject') {
      call.alive = false
      track(send(call, 'call.hangup', { hangup_cause: 'call_rejected', hangup_source: 'callee' }))
    }
    if (command[2] === 'answer') {
      track(
        (async () => {
          await send(call, 'call.answered', { state: 'answered' })
          await openStream(call, request.body.stream_url, call.talk)
          await hangup(call, 'normal_clearing')
        })(),
      )
    }
    return Response.json({ data: { result: 'ok' } })
  })

  return Object.assign(server, {
    apiKey,
    publicKey: publicKeyBase64,
    calls,
    event,
    play: (id: string, plan: Exclude<TelnyxCallPlan, 'hold'>) => track(play(id, plan)),
    async offer(connectionUrl: string, from: string, to: string, talk?: (media: MediaClient) => Promise<void>) {
      const call: FakeTelnyxCall = {
        id: `v3:in-${++sequence}`,
        body: { from, to },
        alive: true,
        direction: 'incoming',
        webhookUrl: connectionUrl,
        commands: [],
        talk,
      }
      calls.set(call.id, call)
      const response = await send(call, 'call.initiated', { state: 'parked' })
      return { call, response }
    },
    idle,
    failNext(status: number, body: unknown) {
      failure = { status, body }
    },
    async endTransfer(id: string) {
      const leg = legs.get(id)!
      leg.alive = false
      await send(leg, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'callee' })
      await hangup(calls.get(id)!, 'normal_clearing')
    },
  })
}
