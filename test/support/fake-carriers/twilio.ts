import { createHmac } from 'node:crypto'
import { pcm16ToUlaw } from '../../../src/voice/g711'
import { connectMedia, createPlayback, type FakeServer, formBody, type MediaClient, startFakeServer } from './shared'

/**
 * A fake Twilio built from its public documentation: the Calls resource (form-encoded, HTTP Basic with the account
 * SID and auth token; 201 with `sid`), status callbacks for the events asked for (CallStatus, CallDuration,
 * AnsweredBy), the answer URL fetched on answer (with AnsweredBy when MachineDetection was asked for), TwiML
 * `<Connect><Stream>` followed by a Media Streams WebSocket (connected, start, media, mark, stop), and every webhook
 * signed with X-Twilio-Signature (base64 HMAC-SHA1 of the URL followed by the sorted POST parameters, as name+value).
 * A live call updated with `Twiml` holding a <Dial> (a transfer) loses its media stream, rings the destination as the
 * test's `transfer` plan says, sends the <Number>'s `answered` progress callback and then the <Dial> action
 * (DialCallStatus, DialCallDuration), and follows the TwiML that answers it: a <Stream> connects a new media stream, a
 * <Hangup> ends the call. With `streamEndsLate` the old stream ends only after the action was answered.
 */

export type TwilioOutcome = 'completed' | 'busy' | 'no-answer' | 'failed' | 'canceled'

/** How a dialled call goes; `hold` leaves it ringing until the test plays it. */
export type TwilioCallPlan =
  | 'hold'
  | {
      outcome: TwilioOutcome
      /** AnsweredBy sent with the answer (only when the call asked for MachineDetection). */
      answeredBy?: string
      /** What the caller does on the media stream before hanging up. */
      talk?: (media: MediaClient) => Promise<void>
      durationSeconds?: number
    }

export type FakeTwilioCall = {
  sid: string
  params: Record<string, any>
  status: string
  twiml?: string
  /** The call's current media stream, and every one it had. */
  media?: MediaClient
  streams: MediaClient[]
  /** The TwiML the call was updated with (transfers). */
  redirects: string[]
}

/**
 * How a transfer's <Dial> goes: `bridged` runs while the caller talks to the destination (answered only);
 * `streamEndsLate`: the call's old media stream is still open (on Twilio's side) when the action is posted.
 */
export type TwilioTransferPlan = {
  outcome: 'completed' | 'busy' | 'no-answer' | 'failed'
  talkSeconds?: number
  bridged?: () => Promise<void>
  streamEndsLate?: boolean
}

export type FakeTwilio = FakeServer & {
  accountSid: string
  authToken: string
  calls: Map<string, FakeTwilioCall>
  /** POSTs a webhook signed as Twilio does (or with the given signature / none, and any other headers) to a public URL of the app. */
  post(
    url: string,
    params: Record<string, string>,
    signature?: string | null,
    headers?: Record<string, string>,
  ): Promise<Response>
  play(sid: string, plan: Exclude<TwilioCallPlan, 'hold'>): Promise<FakeTwilioCall>
  /** Resolves once every call being played has finished. */
  idle(): Promise<void>
  /** The next dial is refused with this answer. */
  failNext(status: number, body: unknown): void
}

export function twilioSignatureOf(authToken: string, url: string, params: Record<string, string>): string {
  const data =
    url +
    Object.keys(params)
      .sort()
      .map((name) => `${name}${params[name]}`)
      .join('')
  return createHmac('sha1', authToken).update(data).digest('base64')
}

const unescapeXml = (text: string) =>
  text
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')

export function startFakeTwilio(options: {
  accountSid?: string
  authToken?: string
  reach: (url: string) => string
  plan?: (call: FakeTwilioCall) => TwilioCallPlan
  /** How a transfer to `destination` goes (default: busy). */
  transfer?: (call: FakeTwilioCall, destination: string) => TwilioTransferPlan
}): FakeTwilio {
  const accountSid = options.accountSid ?? 'AC00000000000000000000000000000001'
  const authToken = options.authToken ?? 'twilio-auth-token-0001'
  const calls = new Map<string, FakeTwilioCall>()
  const { track, idle } = createPlayback()
  let failure: { status: number; body: unknown } | null = null
  let sequence = 0
  const expectedAuth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`

  async function post(
    url: string,
    params: Record<string, string>,
    signature?: string | null,
    extraHeaders: Record<string, string> = {},
  ): Promise<Response> {
    const { body, headers } = formBody(params)
    const signed = signature === undefined ? twilioSignatureOf(authToken, url, params) : signature
    return fetch(options.reach(url), {
      method: 'POST',
      body,
      headers: { ...headers, ...extraHeaders, ...(signed === null ? {} : { 'x-twilio-signature': signed }) },
    })
  }

  const callbackParams = (call: FakeTwilioCall, status: string, extra: Record<string, string> = {}) => ({
    AccountSid: accountSid,
    CallSid: call.sid,
    From: call.params.From,
    To: call.params.To,
    Direction: 'outbound-api',
    ApiVersion: '2010-04-01',
    CallStatus: status,
    ...extra,
  })

  /** Connects the media stream the TwiML asks for, and says connected and start on it. */
  async function openStream(call: FakeTwilioCall, twiml: string): Promise<MediaClient | null> {
    const stream = /<Stream url="([^"]+)"/.exec(twiml)
    if (!stream) return null
    const media = connectMedia(options.reach(unescapeXml(stream[1])))
    call.media = media
    call.streams.push(media)
    await media.opened
    const streamSid = `MZ${call.sid.slice(2)}${call.streams.length}`
    media.send({ event: 'connected', protocol: 'Call', version: '1.0.0' })
    media.send({
      event: 'start',
      sequenceNumber: '1',
      streamSid,
      start: {
        accountSid,
        streamSid,
        callSid: call.sid,
        tracks: ['inbound'],
        customParameters: {},
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    })
    return media
  }

  /** The caller's stream ends as Twilio ends it: stop, then a normal close. */
  async function closeStream(call: FakeTwilioCall, media = call.media): Promise<void> {
    if (!media) return
    media.send({
      event: 'stop',
      sequenceNumber: '99',
      streamSid: `MZ${call.sid.slice(2)}`,
      stop: { accountSid, callSid: call.sid },
    })
    media.close(1000)
    await media.closed
  }

  /** A transfer: the update's <Dial> replaces the stream, rings, and the action's answer says what comes next. */
  async function dial(call: FakeTwilioCall, twiml: string): Promise<void> {
    await Bun.sleep(1)
    const action = unescapeXml(/<Dial[^>]* action="([^"]+)"/.exec(twiml)![1])
    const progress = unescapeXml(/statusCallback="([^"]+)"/.exec(twiml)![1])
    const destination = unescapeXml(/>([^<>]+)<\/(?:Number|Sip)>/.exec(twiml)![1])
    const plan = options.transfer?.(call, destination) ?? { outcome: 'busy' }
    const replaced = call.media
    if (!plan.streamEndsLate) await closeStream(call, replaced)
    const childSid = `CA${'f'.repeat(30)}${String(call.redirects.length).padStart(2, '0')}`
    if (plan.outcome === 'completed') {
      await post(progress, {
        AccountSid: accountSid,
        CallSid: childSid,
        ParentCallSid: call.sid,
        CallStatus: 'in-progress',
        Direction: 'outbound-dial',
        To: destination,
      })
      await plan.bridged?.()
    }
    const talkSeconds = plan.outcome === 'completed' ? (plan.talkSeconds ?? 42) : 0
    const answer = await post(action, {
      ...callbackParams(call, 'in-progress'),
      DialCallStatus: plan.outcome,
      DialCallSid: childSid,
      DialCallDuration: String(talkSeconds),
    })
    call.twiml = await answer.text()
    const reconnected = await openStream(call, call.twiml)
    if (plan.streamEndsLate) await closeStream(call, replaced)
    if (reconnected) return
    call.status = 'completed'
    await post(
      call.params.StatusCallback,
      callbackParams(call, 'completed', { CallDuration: String(talkSeconds + 20) }),
    )
  }

  async function play(sid: string, plan: Exclude<TwilioCallPlan, 'hold'>): Promise<FakeTwilioCall> {
    const call = calls.get(sid)!
    const callback = (status: string, extra?: Record<string, string>) =>
      post(call.params.StatusCallback, callbackParams(call, status, extra))
    await callback('initiated')
    await callback('ringing')
    if (plan.outcome !== 'completed') {
      call.status = plan.outcome
      await callback(plan.outcome, { CallDuration: '0' })
      return call
    }
    call.status = 'in-progress'
    const answeredBy: Record<string, string> =
      call.params.MachineDetection && plan.answeredBy ? { AnsweredBy: plan.answeredBy } : {}
    await callback('in-progress', answeredBy)
    const answer = await post(call.params.Url, callbackParams(call, 'in-progress', answeredBy))
    call.twiml = await answer.text()
    const media = await openStream(call, call.twiml)
    if (media) {
      await plan.talk?.(media)
      // A transfer may have ended the call already.
      if (call.status !== 'in-progress') return call
      await closeStream(call)
    }
    call.status = 'completed'
    await callback('completed', { CallDuration: String(plan.durationSeconds ?? 7), ...answeredBy })
    return call
  }

  const server = startFakeServer((request) => {
    const callPath = /^\/2010-04-01\/Accounts\/([^/]+)\/Calls(?:\/([^/]+))?\.json$/.exec(request.path)
    if (!callPath) return null
    if (request.headers.get('authorization') !== expectedAuth || callPath[1] !== accountSid) {
      return Response.json({ code: 20003, message: 'Authenticate', status: 401 }, { status: 401 })
    }
    if (!callPath[2] && request.method === 'POST') {
      if (failure) {
        const { status, body } = failure
        failure = null
        return Response.json(body, { status })
      }
      const call: FakeTwilioCall = {
        sid: `CA${String(++sequence).padStart(32, '0')}`,
        params: request.body,
        status: 'queued',
        streams: [],
        redirects: [],
      }
      calls.set(call.sid, call)
      const plan = options.plan?.(call) ?? 'hold'
      if (plan !== 'hold') track(Bun.sleep(1).then(() => play(call.sid, plan)))
      return Response.json(
        { sid: call.sid, status: 'queued', to: call.params.To, from: call.params.From },
        { status: 201 },
      )
    }
    const call = callPath[2] ? calls.get(callPath[2]) : undefined
    if (!call)
      return Response.json(
        { code: 20404, message: 'The requested resource was not found', status: 404 },
        { status: 404 },
      )
    if (request.method === 'POST' && typeof request.body.Twiml === 'string' && call.status === 'in-progress') {
      call.redirects.push(request.body.Twiml)
      if (request.body.Twiml.includes('<Dial')) track(dial(call, request.body.Twiml))
      return Response.json({ sid: call.sid, status: call.status })
    }
    if (request.method === 'POST' && request.body.Status === 'completed') {
      const wasUp = call.status === 'in-progress' || call.status === 'queued' || call.status === 'ringing'
      call.status = call.status === 'in-progress' ? 'completed' : 'canceled'
      if (wasUp) {
        call.media?.close(1000)
        track(post(call.params.StatusCallback, callbackParams(call, call.status, { CallDuration: '3' })))
      }
    }
    return Response.json({ sid: call.sid, status: call.status })
  })

  return Object.assign(server, {
    accountSid,
    authToken,
    calls,
    post,
    play: (sid: string, plan: Exclude<TwilioCallPlan, 'hold'>) => {
      const played = play(sid, plan)
      track(played)
      return played
    },
    idle,
    failNext(status: number, body: unknown) {
      failure = { status, body }
    },
  })
}

const FRAME_BYTES = 160

/**
 * The caller's side of one Twilio stream: marks answered once the audio before them arrived, 20 ms µ-law frames spoken
 * in real time, keys pressed.
 */
export function twilioCaller(media: MediaClient) {
  const echoed = new Set<string>()
  const timer = setInterval(() => {
    for (const message of media.texts) {
      if (message?.event === 'mark' && !echoed.has(message.mark.name)) {
        echoed.add(message.mark.name)
        media.send({ event: 'mark', streamSid: message.streamSid, mark: { name: message.mark.name } })
      }
    }
  }, 5)
  return {
    marks: () => echoed.size,
    /** Agent audio frames received. */
    audioFrames: () => media.texts.filter((message) => message?.event === 'media').length,
    async speak(pcm: Int16Array) {
      const ulaw = pcm16ToUlaw(pcm)
      for (let offset = 0, chunk = 1; offset < ulaw.length; offset += FRAME_BYTES, chunk++) {
        const payload = Buffer.from(ulaw.subarray(offset, offset + FRAME_BYTES)).toString('base64')
        media.send({
          event: 'media',
          streamSid: 'MZ1',
          media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload },
        })
        await Bun.sleep(20)
      }
    },
    press: (digits: string) => {
      for (const digit of digits)
        media.send({ event: 'dtmf', streamSid: 'MZ1', dtmf: { track: 'inbound_track', digit } })
    },
    stop: () => clearInterval(timer),
  }
}
