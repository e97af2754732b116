/**
 * Outbound voice calls through the fake Asterisk, set up and read back over the API only, so the same steps drive the
 * in-process app (test/calls/voice-call.test.ts) and the compiled binary (test/binary-voice.test.ts).
 */
import { expect } from 'bun:test'
import type { FakeAri } from './fake-ari'
import type { FakeMediaChannel } from './fake-ari-media'
import type { HttpClient } from './http-app'
import { waitFor } from './wait'

type Json = Record<string, any>

export const GREETING = 'Hello, this is Ava from Acme.'

/** An answer of four sentences: long enough to be talked over after its first sentence was heard. */
export const FOUR_SENTENCE_REPLY = [
  'First, we have tables at six.',
  'Second, there is a table at seven.',
  'Third, we can seat you at eight.',
  'Fourth, nine is also free.',
]

/** Where every test call goes: a Local channel the fake Asterisk answers. */
export const CALLEE = 'Local/102@test'

export type VoiceAgent = { id: number; triggerPath: string }

/** An agent that greets with GREETING, with an API trigger; `start` goes over its Start node's data. */
export async function createVoiceAgent(
  t: HttpClient,
  options: { start?: Json; configurations?: Json } = {},
): Promise<VoiceAgent> {
  const triggerPath = crypto.randomUUID()
  const definition = {
    nodes: [
      {
        id: '1',
        type: 'startCall',
        position: { x: 0, y: 0 },
        data: { name: 'Start', greeting: GREETING, prompt: 'Help the caller book a table.', ...options.start },
      },
      { id: '2', type: 'endCall', position: { x: 200, y: 0 }, data: { name: 'End', prompt: 'Say goodbye.' } },
      { id: '3', type: 'trigger', position: { x: 0, y: 200 }, data: { name: 'API', trigger_path: triggerPath } },
    ],
    edges: [{ id: '1-2', source: '1', target: '2', data: { label: 'Done', condition: 'The caller is done' } }],
  }
  const response = await t.request('POST', '/api/v1/workflow/create/definition', {
    body: {
      name: `Agent ${triggerPath.slice(0, 6)}`,
      workflow_definition: definition,
      workflow_configurations: options.configurations ?? {},
    },
  })
  expect(response.status, response.text).toBe(200)
  return { id: response.body.id, triggerPath }
}

export type PlacedCall = { runId: number; callId: string; media: FakeMediaChannel }

/**
 * Starts a call through the agent's trigger and resolves once its media leg is connected. Calls placed at once must
 * dial different numbers: the call is told from the others by its originate's endpoint, which holds `phoneNumber`.
 * `phoneNumber`: CALLEE as a raw dial string, or a number the configuration's template turns into a fake scenario.
 */
export async function placeCall(
  t: HttpClient,
  fake: FakeAri,
  agent: VoiceAgent,
  initialContext: Json = {},
  phoneNumber = CALLEE,
): Promise<PlacedCall> {
  const requestsBefore = fake.requests.length
  const response = await t.request('POST', `/api/v1/public/agent/${agent.triggerPath}`, {
    body: { phone_number: phoneNumber, initial_context: initialContext },
  })
  expect(response.status, response.text).toBe(200)
  const originated = () =>
    fake.requests
      .slice(requestsBefore)
      .find(
        (request) =>
          request.method === 'POST' &&
          request.path === '/ari/channels' &&
          (request.query.endpoint ?? '').includes(phoneNumber),
      )
  await waitFor('the call originated', () => originated() !== undefined, 5_000)
  const callId = originated()!.query.channelId
  let media: FakeMediaChannel | undefined
  await waitFor('the media leg', () => (media = fake.mediaOf(callId)) !== undefined, 5_000)
  await media!.connected
  return { runId: response.body.workflow_run_id, callId, media: media! }
}

export async function runDetail(t: HttpClient, agent: { id: number }, runId: number): Promise<Json> {
  const response = await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${runId}`)
  expect(response.status, response.text).toBe(200)
  return response.body
}

/** The call's report completed the run, then its conversation was written over it (the transcript file is the last). */
export async function untilWritten(
  t: HttpClient,
  agent: { id: number },
  runId: number,
  timeoutMs = 15_000,
): Promise<Json> {
  await waitFor(
    `run ${runId} completed and written`,
    async () => {
      const run = await runDetail(t, agent, runId)
      return run.is_completed && run.transcript_url !== null && run.logs.voice !== undefined
    },
    timeoutMs,
  )
  return runDetail(t, agent, runId)
}

export const marksProcessed = (media: FakeMediaChannel) =>
  media.sent.filter(({ text }) => text.includes('MEDIA_MARK_PROCESSED')).length

export const turnsOf = (run: Json) => run.logs.transcript.map((turn: Json) => [turn.role, turn.text])
