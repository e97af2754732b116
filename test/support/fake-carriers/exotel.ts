import { connectMedia, createPlayback, type FakeServer, formBody, type MediaClient, startFakeServer } from './shared'

/**
 * A fake Exotel from the documented shapes: "connect to a stream" calls (`POST /v1/Accounts/{sid}/Calls/connect.json`,
 * form-encoded, HTTP Basic with the API key and token; `Call.Sid`), `GET …/Calls/{sid}.json`, the terminal status
 * callback POSTed to the StatusCallback URL as given (Status, ConversationDuration), the Voicebot stream
 * (connected, start with stream_sid, media as base64 16-bit PCM at 8 kHz, stop) and the applet's dynamic URL.
 */

export type ExotelOutcome = 'completed' | 'busy' | 'no-answer' | 'failed'

export type ExotelCallPlan =
  | 'hold'
  | { outcome: ExotelOutcome; talk?: (media: MediaClient) => Promise<void>; conversationSeconds?: number }

export type FakeExotelCall = { sid: string; body: Record<string, any>; status: string; media?: MediaClient }

export type FakeExotel = FakeServer & {
  accountSid: string
  apiKey: string
  apiToken: string
  calls: Map<string, FakeExotelCall>
  /** POSTs a form to a public URL of the app exactly as given (the per-run token is in its query). */
  post(url: string, params: Record<string, string>, headers?: Record<string, string>): Promise<Response>
  idle(): Promise<void>
}

export function startFakeExotel(options: {
  reach: (url: string) => string
  plan?: (call: FakeExotelCall) => ExotelCallPlan
}): FakeExotel {
  const accountSid = 'exotel-sid-0001'
  const apiKey = 'exotel-key-0001'
  const apiToken = 'exotel-token-0001'
  const calls = new Map<string, FakeExotelCall>()
  const { track, idle } = createPlayback()
  let sequence = 0

  const post = (url: string, params: Record<string, string>, headers: Record<string, string> = {}) => {
    const form = formBody(params)
    return fetch(options.reach(url), { method: 'POST', body: form.body, headers: { ...form.headers, ...headers } })
  }

  async function play(call: FakeExotelCall, plan: Exclude<ExotelCallPlan, 'hold'>) {
    let seconds = 0
    if (plan.outcome === 'completed') {
      call.status = 'in-progress'
      const media = connectMedia(options.reach(call.body.StreamUrl))
      call.media = media
      await media.opened
      media.send({ event: 'connected' })
      media.send({
        event: 'start',
        sequence_number: '1',
        stream_sid: `MZ-${call.sid}`,
        start: {
          stream_sid: `MZ-${call.sid}`,
          call_sid: call.sid,
          account_sid: accountSid,
          from: call.body.From,
          to: call.body.CallerId,
          media_format: { encoding: 'audio/x-raw', sample_rate: '8000', bit_rate: '16' },
        },
      })
      await plan.talk?.(media)
      if (call.status === 'in-progress')
        media.send({ event: 'stop', sequence_number: '99', stream_sid: `MZ-${call.sid}` })
      await media.closed
      seconds = plan.conversationSeconds ?? 9
    }
    call.status = plan.outcome
    await post(call.body.StatusCallback, {
      CallSid: call.sid,
      Status: plan.outcome,
      ConversationDuration: String(seconds),
      DateUpdated: new Date().toISOString(),
    })
  }

  const server = startFakeServer((request) => {
    if (request.headers.get('authorization') !== `Basic ${Buffer.from(`${apiKey}:${apiToken}`).toString('base64')}`) {
      return Response.json(
        { RestException: { Status: 401, Message: 'Authentication is required to view this page.' } },
        { status: 401 },
      )
    }
    if (request.method === 'POST' && request.path === `/v1/Accounts/${accountSid}/Calls/connect.json`) {
      const call: FakeExotelCall = { sid: `exotel-call-${++sequence}`, body: request.body, status: 'queued' }
      calls.set(call.sid, call)
      const plan = options.plan?.(call) ?? 'hold'
      if (plan !== 'hold') {
        track(Bun.sleep(1).then(() => play(call, plan)))
      }
      return Response.json({
        Call: { Sid: call.sid, Status: 'in-progress', From: request.body.From, PhoneNumberSid: request.body.CallerId },
      })
    }
    const lookup = new RegExp(`^/v1/Accounts/${accountSid}/Calls/([^/]+)\\.json$`).exec(request.path)
    const call = lookup ? calls.get(lookup[1]) : undefined
    if (request.method === 'GET' && call) return Response.json({ Call: { Sid: call.sid, Status: call.status } })
    return Response.json({ RestException: { Status: 404, Message: 'Not found' } }, { status: 404 })
  })

  return Object.assign(server, {
    accountSid,
    apiKey,
    apiToken,
    calls,
    post,
    idle,
  })
}
