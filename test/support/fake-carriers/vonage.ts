import { createHash, createHmac, generateKeyPairSync, verify } from 'node:crypto'
import { connectMedia, createPlayback, type FakeServer, type MediaClient, startFakeServer } from './shared'

/**
 * A fake Vonage Voice API built from its public documentation: `POST /v1/calls` authenticated by an RS256 JWT of the
 * application (checked against its public key), `PUT /v1/calls/{uuid}` hangup, `GET /v1/calls/{uuid}`; the answer URL
 * fetched with GET and answered with an NCCO whose `connect` opens the WebSocket (`websocket:connected` first, then
 * binary 16-bit PCM at 16 kHz); JSON events (started, ringing, answered, busy, timeout, machine, completed + duration)
 * signed with an HS256 JWT under the signature secret (iat, jti, iss Vonage, api_key, application_id, payload_hash).
 * A transfer (`PUT` action transfer) is only recorded: the call's WebSocket stays open, and the test plays the connect
 * leg's events to the NCCO's eventUrl.
 */

export type VonageOutcome = 'answered' | 'busy' | 'timeout' | 'rejected' | 'failed' | 'cancelled'

export type VonageCallPlan = 'hold' | { outcome: VonageOutcome; machine?: boolean; talk?: (media: MediaClient) => Promise<void>; durationSeconds?: number }

/** `transfers`: the bodies of its transfer requests. */
export type FakeVonageCall = { uuid: string; body: Record<string, any>; status: string; ncco?: any; media?: MediaClient; transfers: Record<string, any>[] }

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
}): FakeVonage {
  const apiKey = 'vonage-key-0001'
  const apiSecret = 'vonage-secret-0001'
  const applicationId = 'aaaaaaaa-bbbb-cccc-dddd-000000000001'
  const signatureSecret = 'vonage-signature-secret-0001'
  applicationKeys ??= generateKeyPairSync('rsa', {
    modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  })
  const { publicKey, privateKey: privateKeyPem } = applicationKeys
  const calls = new Map<string, FakeVonageCall>()
  const { track, idle } = createPlayback()
  let sequence = 0

  function webhookToken(claims: Record<string, unknown>, secret = signatureSecret) {
    const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))
    const payload = b64url(JSON.stringify({ iat: Math.floor(options.now() / 1000), jti: crypto.randomUUID(), iss: 'Vonage', api_key: apiKey, application_id: applicationId, ...claims }))
    return `${header}.${payload}.${createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url')}`
  }

  function event(url: string, body: Record<string, unknown>, authorization?: string | null) {
    const text = JSON.stringify(body)
    const token = authorization === undefined ? `Bearer ${webhookToken({ payload_hash: createHash('sha256').update(text).digest('hex') })}` : authorization
    return fetch(options.reach(url), { method: 'POST', body: text, headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: token }) } })
  }

  const send = (call: FakeVonageCall, status: string, extra: Record<string, unknown> = {}) => {
    call.status = status
    return event(call.body.event_url[0], {
      from: call.body.from.number, to: call.body.to[0].number, uuid: call.uuid, conversation_uuid: `CON-${call.uuid}`, status, direction: 'outbound',
      timestamp: new Date().toISOString(), ...extra,
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
    const answerUrl = new URL(call.body.answer_url[0])
    for (const [name, value] of Object.entries({ to: call.body.to[0].number, from: call.body.from.number, uuid: call.uuid, conversation_uuid: `CON-${call.uuid}` })) {
      answerUrl.searchParams.set(name, value)
    }
    const answer = await fetch(options.reach(answerUrl.toString()), { headers: { authorization: `Bearer ${webhookToken({})}` } })
    call.ncco = await answer.json()
    const endpoint = call.ncco[0]?.action === 'connect' ? call.ncco[0].endpoint[0] : null
    if (endpoint?.type === 'websocket') {
      const media = connectMedia(options.reach(endpoint.uri))
      call.media = media
      await media.opened
      media.send({ event: 'websocket:connected', 'content-type': endpoint['content-type'] })
      await plan.talk?.(media)
      media.close(1000)
      await media.closed
    }
    if (call.status !== 'completed') await send(call, 'completed', { duration: String(plan.durationSeconds ?? 17) })
    return call
  }


  /** The application's RS256 JWT, checked as Vonage does. */
  function authorized(headers: Headers): boolean {
    const token = /^Bearer (.+)$/.exec(headers.get('authorization') ?? '')?.[1]
    const [header, payload, signature] = token?.split('.') ?? []
    if (!header || !payload || !signature) return false
    if (!verify('RSA-SHA256', Buffer.from(`${header}.${payload}`), publicKey, Buffer.from(signature, 'base64url'))) return false
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
    return claims.application_id === applicationId && typeof claims.jti === 'string' && claims.exp > claims.iat
  }

  const server = startFakeServer((request) => {
    if (!authorized(request.headers)) return Response.json({ title: 'Unauthorized', detail: 'You did not provide correct credentials.' }, { status: 401 })
    if (request.method === 'POST' && request.path === '/v1/calls') {
      const call: FakeVonageCall = { uuid: `vonage-call-${++sequence}`, body: request.body, status: 'started', transfers: [] }
      calls.set(call.uuid, call)
      const plan = options.plan?.(call) ?? 'hold'
      if (plan !== 'hold') track(Bun.sleep(1).then(() => play(call.uuid, plan)))
      return Response.json({ uuid: call.uuid, status: 'started', direction: 'outbound', conversation_uuid: `CON-${call.uuid}` }, { status: 201 })
    }
    const call = calls.get(/^\/v1\/calls\/([^/]+)$/.exec(request.path)?.[1] ?? '')
    if (!call) return Response.json({ title: 'Not Found' }, { status: 404 })
    if (request.method === 'GET') return Response.json({ uuid: call.uuid, status: call.status })
    if (request.method === 'PUT' && request.body.action === 'hangup') {
      const wasUp = ['started', 'ringing', 'answered', 'machine', 'human'].includes(call.status)
      if (wasUp) {
        call.media?.close(1000)
        track(send(call, call.status === 'started' || call.status === 'ringing' ? 'cancelled' : 'completed', { duration: '2' }))
      }
      return new Response(null, { status: 204 })
    }
    if (request.method === 'PUT' && request.body.action === 'transfer' && call.status === 'answered') {
      call.transfers.push(request.body)
      return new Response(null, { status: 204 })
    }
    return Response.json({ title: 'Bad Request' }, { status: 400 })
  })

  return Object.assign(server, {
    apiKey, apiSecret, applicationId, privateKey: privateKeyPem, signatureSecret, calls, event, webhookToken,
    play: (uuid: string, plan: Exclude<VonageCallPlan, 'hold'>) => track(play(uuid, plan)),
    idle,
  })
}

/** The telephony configuration of the fake's account and application. */
export const vonageConfig = (fake: FakeVonage) => ({
  provider: 'vonage', api_key: fake.apiKey, api_secret: fake.apiSecret, application_id: fake.applicationId,
  private_key: fake.privateKey, signature_secret: fake.signatureSecret,
})
