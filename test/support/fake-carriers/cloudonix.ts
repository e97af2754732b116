import { connectMedia, createPlayback, type FakeServer, formBody, type MediaClient, startFakeServer } from './shared'

/**
 * A fake Cloudonix from the documented shapes: `POST /calls/{domain}/application` (Bearer token; JSON destination,
 * caller-id and inline CXML; 200 with the session `token`), the domain's sessions (`GET`/`DELETE`), the CDR webhook
 * (`session.token`, `disposition`, `billsec`) and voice application requests, every webhook carrying the
 * `x-cx-apikey` header, and the CXML `<Connect><Stream>` media stream in Twilio's framing.
 */

export type CloudonixDisposition = 'ANSWER' | 'BUSY' | 'NOANSWER' | 'CANCEL' | 'FAILED' | 'CONGESTION'

export type CloudonixCallPlan =
  | 'hold'
  | { disposition: CloudonixDisposition; talk?: (media: MediaClient) => Promise<void>; billsec?: number }

export type FakeCloudonixCall = { token: string; body: Record<string, any>; live: boolean; media?: MediaClient }

export type FakeCloudonix = FakeServer & {
  bearerToken: string
  domain: string
  calls: Map<string, FakeCloudonixCall>
  /** POSTs a CDR to a public URL of the app, with the account's key (or the given one / none). */
  cdr(url: string, body: Record<string, unknown>, apiKey?: string | null): Promise<Response>
  /** A voice application request (form) for an inbound call. */
  voiceRequest(url: string, params: Record<string, string>, apiKey?: string | null): Promise<Response>
  play(token: string, plan: Exclude<CloudonixCallPlan, 'hold'>, cdrUrl: string): Promise<FakeCloudonixCall>
  idle(): Promise<void>
}

export function startFakeCloudonix(options: {
  reach: (url: string) => string
  cdrUrl: string
  plan?: (call: FakeCloudonixCall) => CloudonixCallPlan
}): FakeCloudonix {
  const bearerToken = 'XI-cloudonix-bearer-0001'
  const domain = 'acme.cloudonix.net'
  const calls = new Map<string, FakeCloudonixCall>()
  const { track, idle } = createPlayback()
  let sequence = 0

  const withKey = (apiKey: string | null | undefined): Record<string, string> =>
    apiKey === null ? {} : { 'x-cx-apikey': apiKey ?? bearerToken }
  const cdr = (url: string, body: Record<string, unknown>, apiKey?: string | null) =>
    fetch(options.reach(url), {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...withKey(apiKey) },
    })
  const voiceRequest = (url: string, params: Record<string, string>, apiKey?: string | null) => {
    const form = formBody(params)
    return fetch(options.reach(url), {
      method: 'POST',
      body: form.body,
      headers: { ...form.headers, ...withKey(apiKey) },
    })
  }

  async function play(token: string, plan: Exclude<CloudonixCallPlan, 'hold'>, cdrUrl: string) {
    const call = calls.get(token)!
    if (plan.disposition === 'ANSWER') {
      const stream = /<Stream url="([^"]+)"/.exec(call.body.cxml)
      if (stream) {
        const media = connectMedia(options.reach(stream[1].replace(/&amp;/g, '&')))
        call.media = media
        await media.opened
        media.send({ event: 'connected', protocol: 'Call', version: '1.0.0' })
        media.send({ event: 'start', streamSid: `MZ-${token}`, start: { streamSid: `MZ-${token}`, callSid: token } })
        await plan.talk?.(media)
        if (call.live) media.send({ event: 'stop', streamSid: `MZ-${token}` })
        await media.closed
      }
    }
    call.live = false
    await cdr(cdrUrl, {
      session: { token, domain },
      disposition: plan.disposition,
      billsec: plan.billsec ?? (plan.disposition === 'ANSWER' ? 8 : 0),
      from: call.body['caller-id'],
      to: call.body.destination,
    })
    return call
  }

  const server = startFakeServer((request) => {
    if (request.headers.get('authorization') !== `Bearer ${bearerToken}`)
      return Response.json({ message: 'Unauthorized' }, { status: 401 })
    if (request.method === 'POST' && request.path === `/calls/${domain}/application`) {
      const call: FakeCloudonixCall = { token: `cx-session-${++sequence}`, body: request.body, live: true }
      calls.set(call.token, call)
      const plan = options.plan?.(call) ?? 'hold'
      // A CDR names no run: it must come after the app learnt the session token from this answer, as it does in life.
      if (plan !== 'hold') track(Bun.sleep(50).then(() => play(call.token, plan, options.cdrUrl)))
      return Response.json({ token: call.token, domainId: 7, subscriberId: 11 })
    }
    const session = new RegExp(`^/customers/self/domains/${domain.replace(/\./g, '\\.')}/sessions/([^/]+)$`).exec(
      request.path,
    )
    const call = session ? calls.get(session[1]) : undefined
    if (!call) return Response.json({ message: 'Not found' }, { status: 404 })
    if (request.method === 'GET') return Response.json({ token: call.token, status: call.live ? 'connected' : 'ended' })
    if (request.method === 'DELETE') {
      if (call.live) {
        call.live = false
        call.media?.close(1000)
        track(cdr(options.cdrUrl, { session: { token: call.token }, disposition: 'ANSWER', billsec: 1 }))
      }
      return new Response(null, { status: 204 })
    }
    return null
  })

  return Object.assign(server, {
    bearerToken,
    domain,
    calls,
    cdr,
    voiceRequest,
    play: (token: string, plan: Exclude<CloudonixCallPlan, 'hold'>, cdrUrl: string) => track(play(token, plan, cdrUrl)),
    idle,
  })
}
