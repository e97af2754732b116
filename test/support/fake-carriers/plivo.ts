import { createHmac } from 'node:crypto'
import { connectMedia, createPlayback, type FakeServer, formBody, type MediaClient, startFakeServer } from './shared'

/**
 * A fake Plivo (and Vobiz, its Plivo-compatible twin) built from the public documentation: the Call API
 * (`POST /v1/Account/{auth_id}/Call/`, JSON, numbers without '+', 201 with `request_uuid`; Basic auth for Plivo,
 * X-Auth-ID / X-Auth-Token for Vobiz), `DELETE …/Call/{uuid}/` and `…/Request/{uuid}/`, the live call lookup,
 * form callbacks (ring_url, answer_url, hangup_url with CallStatus/Duration/HangupCause, machine_detection_url with
 * Machine) signed with the nonce signature, Plivo XML `<Stream>` and the audio stream (start, media, playedStream…).
 * A transfer (`POST …/Call/{uuid}/` with `legs=aleg`) ends the call's stream and fetches `aleg_url`; with a `transfer`
 * plan the `<Dial>` it answers is played as Plivo's Dial XML reference says: the callbackUrl gets DialAction=answer when
 * the B leg answers and DialAction=hangup when it hangs up (DialBLegDuration, DialBLegHangupCause), then the action URL
 * gets DialStatus (completed, busy, no-answer, failed; Vobiz also cancel) with DialALegUUID / DialBLegUUID and no
 * duration, and its answer is followed: a `<Stream>` opens a new stream, `<Hangup/>` ends the call. Without a plan the
 * test posts the Dial's callbacks itself.
 */

export type PlivoOutcome = 'completed' | 'busy' | 'timeout' | 'failed' | 'cancel'

export type PlivoCallPlan =
  | 'hold'
  | { outcome: PlivoOutcome; machine?: boolean; talk?: (media: MediaClient) => Promise<void>; durationSeconds?: number }

/** `transferXml`: what the transfer's aleg_url answered (a transfer ends the call's stream, then fetches it); `actionXml`: what the Dial action answered. */
export type FakePlivoCall = {
  uuid: string
  body: Record<string, any>
  status: string
  xml?: string
  media?: MediaClient
  transferXml?: string
  actionXml?: string
}

/** How a transfer's <Dial> goes: answered, the B leg hanging up after `talkSeconds`; or a DialStatus failure. */
export type PlivoTransferPlan =
  | { outcome: 'completed'; talkSeconds: number }
  | { outcome: 'busy' | 'no-answer' | 'failed' | 'cancel' }

export type FakePlivo = FakeServer & {
  authId: string
  authToken: string
  calls: Map<string, FakePlivoCall>
  /** POSTs a form webhook signed as the carrier does (or with the given headers) to a public URL of the app. */
  post(url: string, params: Record<string, string>, headers?: Record<string, string>): Promise<Response>
  play(uuid: string, plan: Exclude<PlivoCallPlan, 'hold'>): Promise<FakePlivoCall>
  idle(): Promise<void>
}

/** The documented V3 signature (Plivo: URL with sorted parameters; Vobiz: URL without its query), independently of the app. */
export function nonceSignatureOf(
  variant: 'plivo' | 'vobiz',
  authToken: string,
  url: string,
  params: Record<string, string>,
  nonce: string,
): string {
  const [base, query = ''] = url.split('?')
  let signed = base
  if (variant === 'plivo') {
    const sortedQuery = query ? query.split('&').sort().join('&') : ''
    const names = Object.keys(params).sort()
    if (sortedQuery || names.length > 0) signed += `?${sortedQuery}`
    if (sortedQuery && names.length > 0) signed += '.'
    signed += names.map((name) => `${name}${params[name]}`).join('')
  }
  return createHmac('sha256', authToken).update(`${signed}.${nonce}`).digest('base64')
}

export function startFakePlivo(options: {
  variant: 'plivo' | 'vobiz'
  reach: (url: string) => string
  plan?: (call: FakePlivoCall) => PlivoCallPlan
  transfer?: (call: FakePlivoCall) => PlivoTransferPlan
}): FakePlivo {
  const { variant } = options
  const authId = variant === 'plivo' ? 'MAPLIVOAUTHID0001' : 'MAVOBIZAUTHID0001'
  const authToken = `${variant}-auth-token-0001`
  const calls = new Map<string, FakePlivoCall>()
  const { track, idle } = createPlayback()
  const prefix = variant === 'vobiz' ? '/api' : ''
  const header = variant === 'plivo' ? 'X-Plivo-Signature' : 'X-Vobiz-Signature'
  let sequence = 0

  async function post(url: string, params: Record<string, string>, headers?: Record<string, string>) {
    const nonce = String(100000 + ++sequence)
    const signed = {
      [`${header}-V3`]: nonceSignatureOf(variant, authToken, url, params, nonce),
      [`${header}-V3-Nonce`]: nonce,
    }
    const form = formBody(params)
    return fetch(options.reach(url), {
      method: 'POST',
      body: form.body,
      headers: { ...form.headers, ...(headers ?? signed) },
    })
  }

  const params = (call: FakePlivoCall, extra: Record<string, string>) => ({
    CallUUID: call.uuid,
    RequestUUID: call.uuid,
    From: call.body.from,
    To: call.body.to,
    Direction: 'outbound',
    ...extra,
  })

  async function hangup(call: FakePlivoCall, status: string, cause: string, duration: string) {
    call.status = status
    call.media?.close(1000)
    await post(
      call.body.hangup_url,
      params(call, {
        CallStatus: status,
        HangupCause: cause,
        Duration: duration,
        BillDuration: duration,
        Event: 'Hangup',
      }),
    )
  }

  const unescapeXml = (text: string) =>
    text
      .replace(/&quot;/g, '"')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&')

  /** Opens the stream a Plivo XML asks for, and says start on it. */
  async function openStream(call: FakePlivoCall, xml: string, streamId: string): Promise<MediaClient | null> {
    const stream = /<Stream[^>]*>([^<]+)<\/Stream>/.exec(xml)
    if (!stream) return null
    const media = connectMedia(options.reach(unescapeXml(stream[1])))
    call.media = media
    await media.opened
    media.send({
      event: 'start',
      sequenceNumber: 0,
      start: {
        callId: call.uuid,
        streamId,
        tracks: ['inbound'],
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 },
      },
    })
    return media
  }

  /** The transfer's <Dial>, played to its callbackUrl and action URL. */
  async function dial(call: FakePlivoCall, xml: string, plan: PlivoTransferPlan) {
    const attribute = (name: string) => unescapeXml(new RegExp(`<Dial[^>]* ${name}="([^"]+)"`).exec(xml)![1])
    const callbackUrl = attribute('callbackUrl')
    const legs = { DialALegUUID: call.uuid, DialBLegUUID: `${call.uuid}-b` }
    const causes = {
      completed: 'NORMAL_CLEARING',
      busy: 'USER_BUSY',
      'no-answer': 'NO_ANSWER',
      failed: 'CALL_REJECTED',
      cancel: 'ORIGINATOR_CANCEL',
    }
    const bLeg = (action: string, extra: Record<string, string> = {}) =>
      post(callbackUrl, params(call, { DialAction: action, ...legs, ...extra }))
    if (plan.outcome === 'completed') await bLeg('answer', { DialBLegStatus: 'answer' })
    if (plan.outcome !== 'cancel') {
      const talked = plan.outcome === 'completed' ? String(plan.talkSeconds) : '0'
      await bLeg('hangup', {
        DialBLegStatus: 'hangup',
        DialBLegDuration: talked,
        DialBLegBillDuration: talked,
        DialBLegHangupCause: causes[plan.outcome],
      })
    }
    const answer = await post(
      attribute('action'),
      params(call, {
        CallStatus: 'in-progress',
        DialStatus: plan.outcome,
        ...legs,
        DialHangupCause: causes[plan.outcome],
      }),
    )
    call.actionXml = await answer.text()
    const media = await openStream(call, call.actionXml, `stream-${call.uuid}-back`)
    if (!media)
      await hangup(
        call,
        'completed',
        'NORMAL_CLEARING',
        String(plan.outcome === 'completed' ? plan.talkSeconds + 20 : 20),
      )
  }

  async function play(uuid: string, plan: Exclude<PlivoCallPlan, 'hold'>): Promise<FakePlivoCall> {
    const call = calls.get(uuid)!
    call.status = 'ringing'
    await post(call.body.ring_url, params(call, { CallStatus: 'ringing', Event: 'Ring' }))
    if (plan.outcome !== 'completed') {
      const causes = { busy: 'USER_BUSY', timeout: 'NO_ANSWER', failed: 'CALL_REJECTED', cancel: 'ORIGINATOR_CANCEL' }
      await hangup(call, plan.outcome, causes[plan.outcome], '0')
      return call
    }
    call.status = 'in-progress'
    if (call.body.machine_detection && plan.machine) {
      await post(call.body.machine_detection_url, params(call, { Machine: 'true', CallStatus: 'in-progress' }))
      for (let waited = 0; call.status === 'in-progress' && waited < 2_000; waited += 5) await Bun.sleep(5)
      return call
    }
    const answer = await post(call.body.answer_url, params(call, { CallStatus: 'in-progress', Event: 'StartApp' }))
    call.xml = await answer.text()
    const media = await openStream(call, call.xml, `stream-${call.uuid}`)
    if (media) await plan.talk?.(media)
    if (call.status === 'in-progress')
      await hangup(call, 'completed', 'NORMAL_CLEARING', String(plan.durationSeconds ?? 11))
    await call.media?.closed
    return call
  }

  const authorized = (headers: Headers) =>
    variant === 'plivo'
      ? headers.get('authorization') === `Basic ${Buffer.from(`${authId}:${authToken}`).toString('base64')}`
      : headers.get('x-auth-id') === authId && headers.get('x-auth-token') === authToken

  const server = startFakeServer((request) => {
    if (!request.path.startsWith(`${prefix}/v1/Account/${authId}/`) || !authorized(request.headers)) {
      return Response.json({ api_id: 'x', error: 'Authentication credentials invalid' }, { status: 401 })
    }
    const path = request.path.slice(`${prefix}/v1/Account/${authId}`.length)
    if (request.method === 'POST' && path === '/Call/') {
      const call: FakePlivoCall = { uuid: `${variant}-call-${++sequence}`, body: request.body, status: 'queued' }
      calls.set(call.uuid, call)
      const plan = options.plan?.(call) ?? 'hold'
      if (plan !== 'hold') track(Bun.sleep(1).then(() => play(call.uuid, plan)))
      return Response.json({ api_id: 'api-1', message: 'call fired', request_uuid: call.uuid }, { status: 201 })
    }
    const transferred = /^\/Call\/([^/]+)\/$/.exec(path)
    const transferring = transferred && request.method === 'POST' ? calls.get(transferred[1]) : undefined
    if (transferring?.status === 'in-progress' && request.body.legs === 'aleg') {
      track(
        (async () => {
          transferring.media?.close(1000)
          const answer = await post(
            request.body.aleg_url,
            params(transferring, { CallStatus: 'in-progress', Event: 'Transfer' }),
          )
          transferring.transferXml = await answer.text()
          const plan = options.transfer?.(transferring)
          if (plan && transferring.transferXml.includes('<Dial'))
            await dial(transferring, transferring.transferXml, plan)
        })(),
      )
      return Response.json({ api_id: 'api-2', message: 'call transferred' }, { status: 202 })
    }
    const target = /^\/(Call|Request)\/([^/]+)\/(\?status=live)?$/.exec(path)
    const call = target ? calls.get(target[2]) : undefined
    const live = call?.status === 'in-progress'
    const pending = call?.status === 'queued' || call?.status === 'ringing'
    if (!target || !call) return Response.json({ api_id: 'x', error: 'not found' }, { status: 404 })
    if (request.method === 'GET')
      return live
        ? Response.json({ call_uuid: call.uuid, call_status: 'in-progress' })
        : Response.json({ error: 'not found' }, { status: 404 })
    if (request.method === 'DELETE' && target[1] === 'Call' && live) {
      track(hangup(call, 'completed', 'NORMAL_CLEARING', '2'))
      return new Response(null, { status: 204 })
    }
    if (request.method === 'DELETE' && target[1] === 'Request' && pending) {
      track(hangup(call, 'cancel', 'ORIGINATOR_CANCEL', '0'))
      return new Response(null, { status: 204 })
    }
    return Response.json({ api_id: 'x', error: 'not found' }, { status: 404 })
  })

  return Object.assign(server, {
    authId,
    authToken,
    calls,
    post,
    play: (uuid: string, plan: Exclude<PlivoCallPlan, 'hold'>) => track(play(uuid, plan)),
    idle,
  })
}
