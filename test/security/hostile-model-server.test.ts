import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { MODEL_ANSWER_MAX_BYTES, onThisMachineFailed } from '../../src/models/http'
import { createLlmClient } from '../../src/models/llm'
import { SSE_LINE_MAX_CHARS } from '../../src/models/sse'
import { createSttClient } from '../../src/models/stt'
import { createTtsClient, SPEECH_ANSWER_MAX_BYTES } from '../../src/models/tts'
import { createAgent } from '../support/agents'
import {
  modelServerFailure,
  say,
  startFakeModels,
  type FakeModelRequest,
  type FakeModels,
} from '../support/fake-models'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'

/*
 * A model server that sends more than anyone should read: endless lines, huge lists, huge error pages, endless audio.
 * Every answer is read under a byte cap and the rest is never read (the fake counts what it handed to the connection:
 * far less than it offered), the request fails with an error naming the cap, and the server keeps answering.
 */

const MiB = 1024 * 1024
/** What may have left the fake beyond what the client read: socket and stream buffers on both sides. */
const BUFFERS = 32 * MiB

let t: HttpTestApp
let models: FakeModels
let connection: string

const onlyRequestTo = (path: string): FakeModelRequest => {
  const [request] = models.requestsTo(path)
  return request
}

async function expectHealthy() {
  const health = await t.request('GET', '/api/v1/health')
  expect(health.status).toBe(200)
}

beforeAll(async () => {
  t = await startHttpTestApp()
  models = startFakeModels()
  const created = await t.request('POST', '/api/v1/organizations/provider-connections', {
    body: { name: 'Hostile', provider: 'openai', base_url: models.baseUrl },
  })
  expect(created.status, created.text).toBe(200)
  connection = created.body.uuid
  const configuration = await t.request('POST', '/api/v1/organizations/model-configurations', {
    body: { name: 'Hostile', llm: { provider_connection_uuid: connection, settings: { model: 'fake-llm' } } },
  })
  expect(configuration.status, configuration.text).toBe(200)
})
afterAll(async () => {
  models.stop()
  await t.close()
})
beforeEach(() => models.reset())

describe('through the API', () => {
  const check = () => t.request('POST', `/api/v1/organizations/provider-connections/${connection}/check`)

  test('a model list of 768 MB: the check fails, the log names the cap, the rest is never read', async () => {
    models.models.queue({ flood: { bytes: 768 * MiB, prefix: '{"object":"list","data":["' } })
    const answer = await check()
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ ok: false, models: [] })
    // A server on this machine: the answer does not say why (docs/security.md), the log does.
    expect(t.logText()).toContain(`sent an answer larger than ${MODEL_ANSWER_MAX_BYTES} bytes`)
    expect(onlyRequestTo('/models').sentBytes).toBeLessThan(MODEL_ANSWER_MAX_BYTES + BUFFERS)
    await expectHealthy()
  })

  test('an error page of 768 MB: the check fails, the log shows the status and the start of it, the rest is never read', async () => {
    models.models.queue({ flood: { bytes: 768 * MiB, status: 500, contentType: 'text/html' } })
    const answer = await check()
    expect(answer.body.ok).toBe(false)
    expect(t.logText()).toMatch(/answered 500: a{300}…"/)
    expect(onlyRequestTo('/models').sentBytes).toBeLessThan(BUFFERS)
    await expectHealthy()
  })

  test('a streamed chat answer that is one 24 MB line: the turn fails naming the line cap, health answers meanwhile', async () => {
    // The checks above left this server marked failing, which refuses new chats (models/health.ts); a good check clears it.
    expect((await t.request('POST', `/api/v1/organizations/provider-connections/${connection}/check`)).body.ok).toBe(
      true,
    )
    const agent = await createAgent(t, 'Flooded')
    const sessions = `/api/v1/workflow/${agent.id}/text-chat/sessions`
    models.chat.queue(say('Hello, how can I help?'))
    const opened = await t.request('POST', sessions, { body: {} })
    expect(opened.status, opened.text).toBe(200)
    expect(opened.body.is_completed).toBe(false)
    models.chat.queue({
      flood: { bytes: 24 * MiB, prefix: 'data: {"choices":[{"delta":{"content":"', contentType: 'text/event-stream' },
    })
    const turn = t.request('POST', `${sessions}/${opened.body.workflow_run_id}/messages`, { body: { text: 'Hello?' } })
    await expectHealthy()
    const answer = await turn
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body).toMatchObject({ is_completed: true, session_data: { end_reason: 'pipeline_error' } })
    expect(answer.body.session_data.turns.at(-1).status).toBe('failed')
    const run = (await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${opened.body.workflow_run_id}`)).body
    // The fake is on this machine: the run tells only that it failed, the log tells why.
    expect(run.logs.warnings.join()).toContain(onThisMachineFailed('chat completion'))
    expect(t.logText()).toContain(`the server sent a line longer than ${SSE_LINE_MAX_CHARS} characters`)
    expect(models.requestsTo('/chat/completions')[1].sentBytes).toBeLessThan(SSE_LINE_MAX_CHARS + BUFFERS)
    await expectHealthy()
  })
})

describe('every model client', () => {
  const target = () => ({ provider: 'hostile', baseUrl: models.baseUrl })

  test('a JSON completion of 64 MB fails at the cap', async () => {
    models.chat.queue({ flood: { bytes: 64 * MiB, prefix: '{"choices":[{"message":{"content":"' } })
    const client = createLlmClient(target(), { model: 'fake-llm' })
    const error = await modelServerFailure(
      client.completeJson({ messages: [{ role: 'user', content: 'hi' }], schema: { type: 'object' }, schemaName: 'x' }),
    )
    expect(error.message).toContain(`larger than ${MODEL_ANSWER_MAX_BYTES} bytes`)
    expect(onlyRequestTo('/chat/completions').sentBytes).toBeLessThan(MODEL_ANSWER_MAX_BYTES + BUFFERS)
  })

  test('a streamed chat answer of many short lines past the whole-answer cap fails at the cap', async () => {
    const line = `data: ${JSON.stringify({ choices: [{ delta: { content: 'a'.repeat(900) } }] })}\n\n`
    models.chat.queue({
      rawEvents: Array.from({ length: Math.ceil((MODEL_ANSWER_MAX_BYTES + MiB) / line.length) }, () =>
        line.slice(6, -2),
      ),
    })
    const client = createLlmClient(target(), { model: 'fake-llm' })
    const drain = async () => {
      for await (const _ of client.stream({ messages: [{ role: 'user', content: 'hi' }] })) {
        /* read it all */
      }
    }
    const error = await modelServerFailure(drain())
    expect(error.message).toContain(`larger than ${MODEL_ANSWER_MAX_BYTES} bytes`)
  })

  test('a transcription of 64 MB fails at the cap', async () => {
    models.transcription.queue({ flood: { bytes: 64 * MiB, prefix: '{"text":"' } })
    const client = createSttClient(target(), { model: 'fake-stt' })
    const error = await modelServerFailure(client.transcribe(new Int16Array(1600)))
    expect(error.message).toContain(`larger than ${MODEL_ANSWER_MAX_BYTES} bytes`)
    expect(onlyRequestTo('/audio/transcriptions').sentBytes).toBeLessThan(MODEL_ANSWER_MAX_BYTES + BUFFERS)
  })

  const synthesizeAll = async (client: ReturnType<typeof createTtsClient>) => {
    let samples = 0
    for await (const chunk of client.synthesize('Hello')) samples += chunk.pcm.length
    return samples
  }

  test('endless speech fails at the audio cap; the audio before it was streamed, not held', async () => {
    models.speech.queue({ flood: { bytes: 256 * MiB, contentType: 'audio/pcm' } })
    const error = await modelServerFailure(
      synthesizeAll(createTtsClient(target(), { model: 'fake-tts', voice: 'alloy' })),
    )
    expect(error.message).toContain(`larger than ${SPEECH_ANSWER_MAX_BYTES} bytes`)
    expect(onlyRequestTo('/audio/speech').sentBytes).toBeLessThan(SPEECH_ANSWER_MAX_BYTES + BUFFERS)
  })

  test('a WAV whose header never ends fails early instead of being copied piece after piece', async () => {
    const header = Buffer.alloc(44)
    header.write('RIFF', 0)
    header.write('WAVE', 8)
    header.write('LIST', 12)
    header.writeUInt32LE(0xfffffff0, 16)
    models.speech.queue({ flood: { bytes: 30 * MiB, prefix: header.subarray(0, 20), contentType: 'audio/wav' } })
    const error = await modelServerFailure(
      synthesizeAll(createTtsClient(target(), { model: 'fake-tts', voice: 'alloy' })),
    )
    expect(error.message).toContain('the WAV header is longer than')
    expect(onlyRequestTo('/audio/speech').sentBytes).toBeLessThan(BUFFERS)
  })
})
