import { createHash, createHmac, generateKeyPairSync, verify } from 'node:crypto'
import { connectMedia, createPlayback, type FakeServer, type MediaClient, startFakeServer } from './shared'

/**
 * A fake Vonage Voice API built from its public documentation: `POST /v1/calls` authenticated by an RS256 JWT of the
 * application (checked against its public key), `PUT /v1/calls/{uuid}` hangup, `GET /v1/calls/{uuid}`; the answer URL
 * fetched with GET and answered with an NCCO whose `connect` opens the WebSocket (`websocket:connected` first, then
 * binary 16-bit PCM at 16 kHz); JSON events (started, ringing, answered, busy, timeout, machine, completed + duration)
 * signed with an HS256 JWT under the signature secret (iat, jti, iss Vonage, api_key, application_id, payload_hash).
 * The answer URL is fetched by `answer_method`: a POST carries the JSON body and its SHA-256 as payload_hash; a signed
 * GET carries a payload_hash over its query parameters (developer.vonage.com, "Decoding signed webhooks"), computed
 * here over the query string since the docs give no canonical form.
 * A transfer (`PUT` action transfer) is recorded; with a `transfer` plan the connect leg is played as the Voice API
 * webhook reference says: started, ringing, then answered (and completed with its duration once the test ends it with
 * `endTransfer`), or a failure status (busy, timeout, rejected, failed, unanswered) with a `completed` of its own, before
 * or after it (Vonage sends `completed` for unanswered legs too). The answer to the failure event (synchronous eventUrl)
 * is the call's next NCCO: a WebSocket `connect` opens a new stream, an empty NCCO ends the call. Without a plan the test
 * plays the connect leg's events itself.
 */

export type VonageOutcome = 'answered' | 'busy' | 'timeout' | 'rejected' | 'failed' | 'cancelled'

export type VonageCallPlan =
  | 'hold'
  | {
      outcome: VonageOutcome
      machine?: boolean
      talk?: (media: MediaClient) => Promise<void>
      durationSeconds?: number
    }

/** `transfers`: the bodies of its transfer requests; `legEvents`: the connect leg's events and what each was answered. */
export type FakeVonageCall = {
  uuid: string
  body: Record<string, any>
  status: string
  ncco?: any
  media?: MediaClient
  transfers: Record<string, any>[]
  legEvents: { status: string; answer: any }[]
}

/** How the connect leg of a transfer goes: answered (until `endTransfer`), or a failure with `completed` first or last. */
export type VonageTransferPlan =
  | { outcome: 'answered' }
  | { outcome: 'busy' | 'timeout' | 'rejected' | 'failed' | 'unanswered'; completedFirst: boolean }

export type FakeVonage = FakeServer & {
  apiKey: string
  apiSecret: string
  applicationId: string
  privateKey: string
  signatureSecret: string
  calls: Map<string, FakeVonageCall>
  /** Sends a signed event (or with the given authorization) to a public URL of the app. */
  event(url: string, body: Record<string, unknown>, authorization?: string | null): Promise<Response>
  /** A signed HS256 token as Vonage puts in its webhooks. */
  webhookToken(claims: Record<string, unknown>, secret?: string): string
  play(uuid: string, plan: Exclude<VonageCallPlan, 'hold'>): Promise<FakeVonageCall>
  /** The answered destination of the call's transfer hangs up after `talkSeconds`: the call ends with it. */
  endTransfer(uuid: string, talkSeconds: number): Promise<void>
  idle(): Promise<void>
}

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url')

/** One application key pair for every fake: RSA key generation is slow. */
let applicationKeys: { publicKey: string; privateKey: string } | null = null

export function startFakeVonage(options: {
  reach: (url: string) => string
  /** The app's clock (ms): webhook tokens are issued (`iat`) at its time. */
  now: () => number
  plan?: (call: FakeVonageCall) => VonageCallPlan
  transfer?: (call: FakeVonageCall) => VonageTransferPlan
}): FakeVonage {
  const apiKey = 'vonage-key-0001'
  const apiSecret = 'vonage-secret-0001'
  const applicationId = 'aaaaaaaa-bbbb-cccc-dddd-000000000001'
  const signatureSecret = 'vonage-signature-secret-0001'
  applicationKeys ??= generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  })
  const { publicKey, privateKey: privateKeyPem } = applicationKeys
  const calls = new Map<string, FakeVonageCall>()
  const { track, idle } = createPlayback()
  let sequence = 0

  function webhookToken(claims: Record<string, unknown>, secret = signatureSecret) {
    const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))
    const payload = b64url(
      JSON.stringify({
        iat: Math.floor(options.now() / 1000),
        jti: crypto.randomUUID(),
        iss: 'Vonage',
        api_key: apiKey,
        application_id: applicationId,
        ...claims,
      }),
    )
    return `${header}.${payload}.${createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url')}`
  }

  function event(url: string, body: Record<string, unknown>, authorization?: string | null) {
    const text = JSON.stringify(body)
    const token =
      authorization === undefined
        ? `Bearer ${webhookToken({ payload_hash: createHash('sha256').update(text).digest('hex') })}`
        : authorization
    return fetch(options.reach(url), {
      method: 'POST',
      body: text,
      headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: token }) },
    })
  }

  const send = (call: FakeVonageCall, status: string, extra: Record<string, unknown> = {}) => {
    call.status = status
    return event(call.body.event_url[0], {
      from: call.body.from.number,
      to: call.body.to[0].number,
      uuid: call.uuid,
      conversation_uuid: `CON-${call.uuid}`,
      status,
      direction: 'outbound',
      timestamp: new Date().toISOString(),
      ...extra,
    })
  }

  async function play(uuid: string, plan: Exclude<VonageCallPlan, 'hold'>) {
    const call = calls.get(uuid)!
    await send(call, 'started')
    await send(call, 'ringing')
    if (plan.outcome !== 'answered') {
      await send(call, plan.outcome)
      return call
    }
    await send(call, 'answered')
    if (call.body.machine_detection && plan.machine) {
      await send(call, 'machine')
      for (let waited = 0; call.status !== 'completed' && waited < 2_000; waited += 5) await Bun.sleep(5)
      return call
    }
    const fields = {
      to: call.body.to[0].number,
      from: call.body.from.number,
      uuid: call.uuid,
      conversation_uuid: `CON-${call.uuid}`,
    }
    const answer =
      call.body.answer_method === 'POST'
        ? await event(call.body.answer_url[0], fields)
        : await signedGet(call.body.answer_url[0], fields)
    if (answer.status !== 200) throw new Error(`the answer URL answered ${answer.status}`)
    call.ncco = await answer.json()
    const media = await followNcco(call, call.ncco)
    if (media) {
      await plan.talk?.(media)
      // A transfer may have moved the call to another WebSocket, or ended it.
      await closeCall(call, plan.durationSeconds ?? 17)
    } else if (call.status !== 'completed')
      await send(call, 'completed', { duration: String(plan.durationSeconds ?? 17) })
    return call
  }

  /** A signed GET: its query parameters, and a payload_hash over them. */
  function signedGet(url: string, fields: Record<string, string>) {
    const target = new URL(url)
    for (const [name, value] of Object.entries(fields)) target.searchParams.set(name, value)
    const hash = createHash('sha256').update(target.search.slice(1)).digest('hex')
    return fetch(options.reach(target.toString()), {
      headers: { authorization: `Bearer ${webhookToken({ payload_hash: hash })}` },
    })
  }

  /** Runs an NCCO: a WebSocket `connect` opens the call's (new) stream; anything else, an empty one included, ends the call. */
  async function followNcco(call: FakeVonageCall, ncco: any): Promise<MediaClient | null> {
    const endpoint = Array.isArray(ncco) && ncco[0]?.action === 'connect' ? ncco[0].endpoint[0] : null
    if (endpoint?.type !== 'websocket') {
      await closeCall(call, 5)
      return null
    }
    const media = connectMedia(options.reach(endpoint.uri))
    call.media = media
    await media.opened
    media.send({ event: 'websocket:connected', 'content-type': endpoint['content-type'] })
    return media
  }

  async function closeCall(call: FakeVonageCall, durationSeconds: number) {
    const media = call.media
    media?.close(1000)
    await media?.closed
    if (call.status !== 'completed') await send(call, 'completed', { duration: String(durationSeconds) })
  }

  /** The connect leg of a transfer, to the NCCO's eventUrl. */
  const legs = new Map<string, { eventUrl: string; leg: string }>()
  async function legEvent(call: FakeVonageCall, status: string, extra: Record<string, unknown> = {}) {
    const { eventUrl, leg } = legs.get(call.uuid)!
    const answer = await event(eventUrl, {
      uuid: leg,
      conversation_uuid: `CON-${call.uuid}`,
      status,
      direction: 'outbound',
      from: call.transfers.at(-1)!.destination.ncco[0].from,
      to: call.body.to[0].number,
      timestamp: new Date().toISOString(),
      ...extra,
    })
    const text = await answer.text()
    const parsed = text ? JSON.parse(text) : null
    call.legEvents.push({ status, answer: parsed })
    return parsed
  }

  async function transfer(call: FakeVonageCall, plan: VonageTransferPlan) {
    const [connect] = call.transfers.at(-1)!.destination.ncco
    legs.set(call.uuid, { eventUrl: connect.eventUrl[0], leg: `${call.uuid}-leg-${call.transfers.length}` })
    // The transfer replaced the NCCO that held the WebSocket.
    call.media?.close(1000)
    await legEvent(call, 'started')
    await legEvent(call, 'ringing')
    if (plan.outcome === 'answered') {
      await legEvent(call, 'answered')
      return
    }
    if (plan.completedFirst) await legEvent(call, 'completed', { duration: '0' })
    const next = await legEvent(call, plan.outcome)
    if (!plan.completedFirst) await legEvent(call, 'completed', { duration: '0' })
    await followNcco(call, next)
  }

  /** The application's RS256 JWT, checked as Vonage does. */
  function authorized(headers: Headers): boolean {
    const token = /^Bearer (.+)$/.exec(headers.get('authorization') ?? '')?.[1]
    const [header, payload, signature] = token?.split('.') ?? []
    if (!header || !payload || !signature) return false
    if (!verify('RSA-SHA256', Buffer.from(`${header}.${payload}`), publicKey, Buffer.from(signature, 'base64url')))
      return false
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
    return claims.application_id === applicationId && typeof claims.jti === 'string' && claims.exp > claims.iat
  }

  const server = startFakeServer((request) => {
    if (!authorized(request.headers))
      return Response.json(
        { title: 'Unauthorized', detail: 'You did not provide correct credentials.' },
        { status: 401 },
      )
    if (request.method === 'POST' && request.path === '/v1/calls') {
      const call: FakeVonageCall = {
        uuid: `vonage-call-${++sequence}`,
        body: request.body,
        status: 'started',
        transfers: [],
        legEvents: [],
      }
      calls.set(call.uuid, call)
      const plan = options.plan?.(call) ?? 'hold'
      if (plan !== 'hold') track(Bun.sleep(1).then(() => play(call.uuid, plan)))
      return Response.json(
        { uuid: call.uuid, status: 'started', direction: 'outbound', conversation_uuid: `CON-${call.uuid}` },
        { status: 201 },
      )
    }
    const call = calls.get(/^\/v1\/calls\/([^/]+)$/.exec(request.path)?.[1] ?? '')
    if (!call) return Response.json({ title: 'Not Found' }, { status: 404 })
    if (request.method === 'GET') return Response.json({ uuid: call.uuid, status: call.status })
    if (request.method === 'PUT' && request.body.action === 'hangup') {
      const wasUp = ['started', 'ringing', 'answered', 'machine', 'human'].includes(call.status)
      if (wasUp) {
        call.media?.close(1000)
        track(
          send(call, call.status === 'started' || call.status === 'ringing' ? 'cancelled' : 'completed', {
            duration: '2',
          }),
        )
      }
      return new Response(null, { status: 204 })
    }
    if (request.method === 'PUT' && request.body.action === 'transfer' && call.status === 'answered') {
      call.transfers.push(request.body)
      const plan = options.transfer?.(call)
      if (plan) track(Bun.sleep(1).then(() => transfer(call, plan)))
      return new Response(null, { status: 204 })
    }
    return Response.json({ title: 'Bad Request' }, { status: 400 })
  })

  return Object.assign(server, {
    apiKey,
    apiSecret,
    applicationId,
    privateKey: privateKeyPem,
    signatureSecret,
    calls,
    event,
    webhookToken,
    play: (uuid: string, plan: Exclude<VonageCallPlan, 'hold'>) => track(play(uuid, plan)),
    async endTransfer(uuid: string, talkSeconds: number) {
      const call = calls.get(uuid)!
      await legEvent(call, 'completed', { duration: String(talkSeconds) })
      await send(call, 'completed', { duration: String(talkSeconds + 20) })
    },
    idle,
  })
}

/** The telephony configuration of the fake's account and application. */
export const vonageConfig = (fake: FakeVonage) => ({
  provider: 'vonage',
  api_key: fake.apiKey,
  api_secret: fake.apiSecret,
  application_id: fake.applicationId,
  private_key: fake.privateKey,
  signature_secret: fake.signatureSecret,
})
