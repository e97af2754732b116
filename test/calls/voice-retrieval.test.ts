import { afterAll, beforeAll, expect, test } from 'bun:test'
import { processQueuedDocuments } from '../../src/knowledge/processing'
import { startAriVoiceApp, type AriVoiceApp } from '../support/ari-voice-app'
import { callTool, say } from '../support/fake-models'
import { inProcessClient, MIME, uploadDocument } from '../support/knowledge'
import { callerSpeech } from '../support/voice'
import { createVoiceAgent, marksProcessed, placeCall, untilWritten } from '../support/voice-calls'
import { waitFor } from '../support/wait'

// A knowledge-base retrieval on a voice call (fake ARI): the turn that waited for it says how much of its latency the
// retrieval took, in logs.voice, beside the tool call's own timing in logs.tool_calls.

let app: AriVoiceApp
beforeAll(async () => {
  app = await startAriVoiceApp({ allow_raw_dial_strings: true })
  // The fake model server's embeddings added to the default configuration startAriVoiceApp made.
  const { t, models } = app
  const connection = await t.request('POST', '/api/v1/organizations/provider-connections', {
    body: { name: 'Fake embeddings', provider: 'openai', base_url: models.baseUrl },
  })
  const configurations = await t.request('GET', '/api/v1/organizations/model-configurations')
  const configuration = configurations.body.configurations.find((entry: { is_default: boolean }) => entry.is_default)
  const updated = await t.request('PUT', `/api/v1/organizations/model-configurations/${configuration.uuid}`, {
    body: { embeddings: { provider_connection_uuid: connection.body.uuid, settings: { model: 'fake-embed' } } },
  })
  expect(updated.status, updated.text).toBe(200)
})
afterAll(() => app.stop())

test("a turn that retrieved from the knowledge base carries the retrieval's share in logs.voice", async () => {
  const { t, fake, models } = app
  const text = new TextEncoder().encode('Deliveries leave the warehouse every Tuesday and Friday.')
  const uploaded = await uploadDocument(inProcessClient(t), t.adminKey, 'deliveries.txt', text, MIME.txt, 'chunked')
  expect(uploaded.status, uploaded.text).toBe(200)
  await processQueuedDocuments(t.ctx)
  const agent = await createVoiceAgent(t, { start: { document_uuids: [uploaded.body.document_uuid] } })
  models.transcription.queue({ text: 'When do deliveries leave?' })
  models.chat.queue(callTool('retrieve_from_knowledge_base', { query: 'delivery days' }), say('Tuesdays and Fridays.'))
  const call = await placeCall(t, fake, agent)
  await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
  call.media.speak(await callerSpeech('When do deliveries leave?'))
  await waitFor(
    'the answer spoken',
    () => models.requestsTo('/audio/speech').some((request) => request.body.input === 'Tuesdays and Fridays.'),
    15_000,
  )
  await waitFor('the answer played', () => marksProcessed(call.media) >= 2, 10_000)
  fake.hangup(call.callId)
  const run = await untilWritten(t, agent, call.runId)
  const [retrieval] = run.logs.tool_calls
  expect(retrieval.function_name).toBe('retrieve_from_knowledge_base')
  const [turn] = run.logs.voice.turns
  expect(turn.retrieval_ms).toBeGreaterThan(0)
  // The share is part of the turn's time to first text, and covers the tool's own embedding and search times.
  expect(turn.retrieval_ms).toBeLessThanOrEqual(turn.first_text_ms)
  expect(turn.retrieval_ms).toBeGreaterThanOrEqual(
    retrieval.knowledge_base.embedding_ms + retrieval.knowledge_base.search_ms - 1,
  )
}, 60_000)
