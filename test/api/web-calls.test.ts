import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { createVoiceConversations } from '../../src/calls/voice'
import { SESSION_LIFETIME_MS } from '../../src/auth/sessions'
import { resample } from '../../src/lib/resample'
import { createTestApp, type TestApp } from '../support/app'
import { say, startFakeModels, type FakeModels } from '../support/fake-models'
import { callerSpeech, silence8k } from '../support/voice'
import { createVoiceAgent, FOUR_SENTENCE_REPLY, GREETING, untilWritten, type VoiceAgent } from '../support/voice-calls'
import { configureFakeVoiceModels, configureModelsNeverAsked } from '../support/voice-models'
import { waitFor } from '../support/wait'
import { contactAttempts } from '../../src/campaigns/attempts'

/**
 * Web calls black-box: the run is started over HTTP, its WebSocket opened on the served app as a browser (session
 * cookie + Origin) or an API client (X-API-Key) would, audio as 16-bit PCM; the fake model server answers; the run is
 * read back over the API.
 */

let t: TestApp
let models: FakeModels
let base: string
let agent: VoiceAgent
/** Moves the app's clock ahead of real time (sessions expire by it). */
let clockAheadMs = 0

beforeAll(async () => {
  t = createTestApp({ clock: { now: () => Date.now() + clockAheadMs }, flags: { 'web-call-limit': '2' } })
  models = startFakeModels()
  await configureFakeVoiceModels(t, models)
  const conversations = createVoiceConversations(t.ctx, {
    attempts: contactAttempts,
    pipeline: { tickIntervalMs: 20, mediaLossGraceMs: 100 },
  })
  t.ctx.telephony.onAnswered((call) => conversations.onAnswered(call))
  base = await t.httpUrl()
  agent = await createVoiceAgent(t)
})
afterAll(() => {
  models.stop()
  t.close()
})
beforeEach(() => {
  models.reset()
  models.transcription.handler = () => ({ text: '' })
})

const open: WebSocket[] = []
/** Socket paths of the calls each test started (those it never joined are joined and hung up after it). */
const startedPaths = new Set<string>()
afterEach(async () => {
  for (const socket of open.splice(0)) socket.close()
  for (const path of startedPaths) {
    const call = connect(path, { 'x-api-key': t.adminKey })
    call.socket.onopen = () => call.socket.close()
  }
  startedPaths.clear()
  // every web call of a test is over before the next starts (the limit counts open ones)
  await waitFor(
    'no web call open',
    () =>
      t.ctx.sqlite.query("SELECT id FROM workflow_runs WHERE mode = 'webcall' AND state <> 'completed'").all()
        .length === 0,
    10_000,
  )
})

async function startCall(headers: Record<string, string> = {}, key: string | null = t.adminKey, workflowId = agent.id) {
  const response = await t.request('POST', `/api/v1/workflow/${workflowId}/web-calls`, { key, headers, body: {} })
  if (response.status === 200 && key === t.adminKey) startedPaths.add(response.body.socket_path)
  return response
}

async function signIn(apiKey = t.adminKey) {
  const response = await t.request('POST', '/api/v1/auth/session', { key: null, body: { api_key: apiKey } })
  expect(response.status).toBe(200)
  return { cookie: response.headers.get('set-cookie')!.split(';')[0], csrf: response.body.session.csrf_token as string }
}

type Socket = {
  socket: WebSocket
  messages: Record<string, any>[]
  audioBytes: () => number
  closed: Promise<{ code: number; reason: string }>
}

/**
 * Opens a call's socket; every text message is kept, binary ones counted; the first `acknowledged` marks are reported
 * `played` at once (the others stay playing, as on a page whose speaker is behind).
 */
function connect(path: string, headers: Record<string, string>, acknowledged = Number.POSITIVE_INFINITY): Socket {
  const socket = new WebSocket(`${base.replace('http', 'ws')}${path}`, { headers } as any)
  socket.binaryType = 'arraybuffer'
  startedPaths.delete(path)
  open.push(socket)
  const messages: Record<string, any>[] = []
  let bytes = 0
  socket.onmessage = (event) => {
    if (typeof event.data !== 'string') {
      bytes += (event.data as ArrayBuffer).byteLength
      return
    }
    const message = JSON.parse(event.data)
    messages.push(message)
    if (message.type === 'mark' && acknowledged-- > 0)
      socket.send(JSON.stringify({ type: 'played', mark: message.mark }))
  }
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.onclose = (event) => resolve({ code: event.code, reason: event.reason })
  })
  return { socket, messages, audioBytes: () => bytes, closed }
}

const opened = (socket: WebSocket) =>
  new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve()
    socket.onerror = () => reject(new Error('the socket did not open'))
  })

/** The upgrade's HTTP answer when it is refused (a WebSocket object only sees an error). */
async function upgradeAnswer(path: string, headers: Record<string, string>) {
  const response = await fetch(`${base}${path}`, {
    headers: {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      ...headers,
    },
  })
  return { status: response.status, body: (await response.json().catch(() => null)) as any }
}

/** 16 kHz PCM frames of 20 ms, sent at about real time. */
async function speak(socket: WebSocket, pcm16k: Int16Array) {
  for (let offset = 0; offset < pcm16k.length; offset += 320) {
    socket.send(pcm16k.slice(offset, offset + 320))
    await Bun.sleep(18)
  }
}

describe('a web call', () => {
  test('greeting heard, an utterance transcribed and answered live on the socket, hang-up: a recorded webcall run in channel web', async () => {
    models.transcription.queue({ text: 'Can I book a table for two tonight?' })
    models.chat.queue(say('Of course. Which time suits you?'))
    const started = await startCall()
    expect(started.status, started.text).toBe(200)
    expect(started.body.sample_rates).toContain(16000)
    const call = connect(started.body.socket_path, { 'x-api-key': t.adminKey })
    await opened(call.socket)
    call.socket.send(JSON.stringify({ type: 'start', sample_rate: 16000 }))
    await waitFor('the greeting line', () => call.messages.some((m) => m.type === 'transcript' && m.role === 'agent'))
    expect(call.messages[0]).toEqual({ type: 'ready', sample_rate: 16000 })
    // more than half a second of agent audio at 16 kHz
    await waitFor('the greeting audio', () => call.audioBytes() > 16000, 5_000)

    const speech = resample(await callerSpeech('Can I book a table for two tonight?'), 8000, 16000)
    await speak(call.socket, speech)
    await speak(call.socket, resample(silence8k(1200), 8000, 16000))
    await waitFor(
      'the answer line',
      () => call.messages.filter((m) => m.type === 'transcript' && m.role === 'agent').length >= 2,
      15_000,
    )
    expect(call.messages.filter((m) => m.type === 'transcript').map((m) => [m.role, m.text])).toEqual([
      ['agent', GREETING],
      ['user', 'Can I book a table for two tonight?'],
      ['agent', 'Of course. Which time suits you?'],
    ])
    call.socket.send(JSON.stringify({ type: 'hangup' }))
    expect((await call.closed).code).toBe(1000)

    const run = await untilWritten(t, agent, started.body.workflow_run_id)
    expect(run.mode).toBe('webcall')
    expect(run.recording_url).toBeString()
    expect(run.logs.transcript.map((turn: any) => turn.role)).toEqual(['agent', 'user', 'agent'])
    expect(run.cost_info.telephony ?? 0).toBe(0)
    const usage = await t.request(
      'GET',
      `/api/v1/organizations/usage/runs?filters=${encodeURIComponent(JSON.stringify([{ attribute: 'callChannel', type: 'radio', value: { status: 'web' } }]))}`,
    )
    expect(usage.status, usage.text).toBe(200)
    expect(usage.body.runs.map((item: any) => item.id)).toContain(started.body.workflow_run_id)
  }, 40_000)

  test('a barge-in tells the page to drop its queued audio', async () => {
    const reply = FOUR_SENTENCE_REPLY
    models.transcription.queue({ text: 'Tables please.' }, { text: 'Seven works.' })
    models.chat.queue(say(reply.join(' ')), say('Great.'))
    const started = await startCall()
    // the greeting and the reply's first sentence are heard; the rest is still queued at the page
    const call = connect(started.body.socket_path, { 'x-api-key': t.adminKey }, 2)
    await opened(call.socket)
    call.socket.send(JSON.stringify({ type: 'start', sample_rate: 16000 }))
    const marks = () => call.messages.filter((m) => m.type === 'mark').length
    await waitFor('the greeting', () => marks() >= 1, 5_000)
    await speak(call.socket, resample(await callerSpeech('Tables please.'), 8000, 16000))
    await speak(call.socket, resample(silence8k(800), 8000, 16000))
    await waitFor('the reply under way', () => marks() >= 3, 10_000)
    expect(call.messages.some((m) => m.type === 'clear')).toBe(false)
    await speak(call.socket, resample(await callerSpeech('Seven works.'), 8000, 16000))
    await speak(call.socket, resample(silence8k(800), 8000, 16000))
    await waitFor('a clear', () => call.messages.some((m) => m.type === 'clear'), 10_000)
  }, 40_000)
})

describe('who may open a web call', () => {
  test('without a key or session: 401 to start it; its socket without either is 401 too', async () => {
    const refused = await startCall({}, null)
    expect(refused.status).toBe(401)
    const started = await startCall()
    const answer = await upgradeAnswer(started.body.socket_path, {})
    expect(answer.status).toBe(401)
    expect(answer.body.detail).toBeString()
  })

  test("another organization's agent is 404, and so is its call's socket", async () => {
    const other = t.newOrg('other-web')
    await configureModelsNeverAsked(t, other.key)
    expect((await startCall({}, other.key)).status).toBe(404)
    const started = await startCall()
    const answer = await upgradeAnswer(started.body.socket_path, { 'x-api-key': other.key })
    expect(answer.status).toBe(404)
    expect(answer.body).toEqual({ detail: 'Web call not found' })
  })

  test('a session opens the socket only with the CSRF token to start and from its own origin; another site is 403', async () => {
    const { cookie, csrf } = await signIn()
    expect((await startCall({ cookie }, null)).status).toBe(403)
    const started = await startCall({ cookie, 'x-csrf-token': csrf }, null)
    expect(started.status, started.text).toBe(200)
    const foreign = await upgradeAnswer(started.body.socket_path, { cookie, origin: 'https://evil.example' })
    expect(foreign.status).toBe(403)
    const call = connect(started.body.socket_path, { cookie, origin: base })
    await opened(call.socket)
  })

  test('a second socket for the same call is refused (400)', async () => {
    const started = await startCall()
    const call = connect(started.body.socket_path, { 'x-api-key': t.adminKey })
    await opened(call.socket)
    const second = await upgradeAnswer(started.body.socket_path, { 'x-api-key': t.adminKey })
    expect(second.status).toBe(400)
  })

  test('signing out closes the socket of the session’s call (4401)', async () => {
    const { cookie, csrf } = await signIn()
    const started = await startCall({ cookie, 'x-csrf-token': csrf }, null)
    const call = connect(started.body.socket_path, { cookie, origin: base })
    await opened(call.socket)
    call.socket.send(JSON.stringify({ type: 'start', sample_rate: 16000 }))
    const signedOut = await t.request('DELETE', '/api/v1/auth/session', {
      key: null,
      headers: { cookie, 'x-csrf-token': csrf },
    })
    expect(signedOut.status).toBe(200)
    expect(await call.closed).toEqual({ code: 4401, reason: 'signed out' })
  })

  test('archiving the key of a call, or the expiry of the session of another, closes each socket (4401) and ends its run', async () => {
    const created = await t.request('POST', '/api/v1/user/api-keys', { body: { name: 'Web caller' } })
    expect(created.status, created.text).toBe(200)
    const key = created.body.api_key as string
    const byKey = await startCall({}, key)
    const keyCall = connect(byKey.body.socket_path, { 'x-api-key': key })
    const { cookie, csrf } = await signIn()
    const bySession = await startCall({ cookie, 'x-csrf-token': csrf }, null)
    const sessionCall = connect(bySession.body.socket_path, { cookie, origin: base })
    for (const call of [keyCall, sessionCall]) {
      await opened(call.socket)
      call.socket.send(JSON.stringify({ type: 'start', sample_rate: 16000 }))
    }
    for (const call of [keyCall, sessionCall])
      await waitFor('the greeting line', () => call.messages.some((m) => m.type === 'transcript' && m.role === 'agent'))

    const archived = await t.request('DELETE', `/api/v1/user/api-keys/${created.body.id}`)
    expect(archived.status, archived.text).toBe(200)
    clockAheadMs = SESSION_LIFETIME_MS + 1000
    try {
      // Nothing tells the socket: the periodic check finds the key archived and the session expired.
      expect(await keyCall.closed).toEqual({ code: 4401, reason: 'signed out' })
      expect(await sessionCall.closed).toEqual({ code: 4401, reason: 'signed out' })
    } finally {
      clockAheadMs = 0
    }
    for (const started of [byKey, bySession]) {
      const run = await untilWritten(t, agent, started.body.workflow_run_id)
      // The caller's side ended the call: as a sign-out does, it is the caller hanging up.
      expect(run.is_completed).toBe(true)
      expect(run.gathered_context.mapped_call_disposition).toBe('user_hangup')
      expect(run.logs.session.end_reason).toBe('user_hangup')
    }
  }, 20_000)

  test('the organization’s web call limit: the next start is 429 with its reason, no run made', async () => {
    const first = await startCall()
    const second = await startCall()
    expect([first.status, second.status]).toEqual([200, 200])
    const runsBefore = t.ctx.sqlite.query('SELECT count(*) AS n FROM workflow_runs').get()
    const third = await startCall()
    expect(third.status).toBe(429)
    expect(third.body.detail).toContain('Web call limit reached')
    expect(t.ctx.sqlite.query('SELECT count(*) AS n FROM workflow_runs').get()).toEqual(runsBefore)
    for (const started of [first, second])
      await opened(connect(started.body.socket_path, { 'x-api-key': t.adminKey }).socket)
  })

  test('an agent whose models cannot run is refused with the reason (400), before any run', async () => {
    const bare = t.newOrg('no-models')
    const made = await createVoiceAgent({
      request: (method, path, options) => t.request(method, path, { ...options, key: bare.key }),
    })
    const refused = await startCall({}, bare.key, made.id)
    expect(refused.status).toBe(400)
    expect(refused.body.detail).toStartWith('The agent cannot take a call: ')
  })
})

describe('what the socket takes', () => {
  async function readyCall() {
    const started = await startCall()
    const call = connect(started.body.socket_path, { 'x-api-key': t.adminKey })
    await opened(call.socket)
    return call
  }

  test('an oversized frame closes it with 1008', async () => {
    const call = await readyCall()
    call.socket.send(JSON.stringify({ type: 'start', sample_rate: 16000 }))
    call.socket.send(new Int16Array(16000)) // one second in one frame
    expect(await call.closed).toEqual({ code: 1008, reason: 'audio frames are at most 100 ms' })
  })

  test('a rate outside the set, audio before start, odd bytes and unknown text each close it with 1008', async () => {
    const cases: [(socket: WebSocket) => void, string][] = [
      [(socket) => socket.send(JSON.stringify({ type: 'start', sample_rate: 11025 })), 'sample_rate must be one of'],
      [(socket) => socket.send(new Int16Array(160)), 'send {"type":"start"} before audio'],
      [
        (socket) => {
          socket.send(JSON.stringify({ type: 'start', sample_rate: 8000 }))
          socket.send(new Uint8Array(161))
        },
        'an even number of bytes',
      ],
      [(socket) => socket.send('not json'), 'unknown message'],
    ]
    for (const [send, reason] of cases) {
      const call = await readyCall()
      send(call.socket)
      const closed = await call.closed
      expect(closed.code).toBe(1008)
      expect(closed.reason).toContain(reason)
    }
  })

  test('audio faster than real time closes it with 1008', async () => {
    const call = await readyCall()
    call.socket.send(JSON.stringify({ type: 'start', sample_rate: 8000 }))
    for (let frame = 0; frame < 40; frame++) call.socket.send(new Int16Array(800)) // 4 s at once
    expect(await call.closed).toEqual({ code: 1008, reason: 'audio arrives faster than real time' })
  })
})
