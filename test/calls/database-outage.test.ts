import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startAriVoiceApp, type AriVoiceApp } from '../support/ari-voice-app'
import { say } from '../support/fake-models'
import { type PostgresBehindProxy, postgresMissing, startPostgresBehindProxy } from '../support/postgres'
import { callerSpeech } from '../support/voice'
import { createVoiceAgent, GREETING, marksProcessed, placeCall, turnsOf } from '../support/voice-calls'
import { waitFor } from '../support/wait'

/**
 * PostgreSQL going away in the middle of a call (the instance's connections cut, nothing answers new ones): the
 * caller still hears the agent, and the run is written once the database is back, not left open until a restart.
 */

const missing = postgresMissing()
let database: PostgresBehindProxy
let proxy: PostgresBehindProxy['proxy']
let app: AriVoiceApp

beforeAll(async () => {
  if (missing) return
  database = await startPostgresBehindProxy('outage')
  proxy = database.proxy
  app = await startAriVoiceApp({ allow_raw_dial_strings: true }, {}, {}, { 'database-url': database.url })
})

afterAll(async () => {
  await app?.stop()
  database?.stop()
})

test.skipIf(missing !== null)(
  'the database goes down mid-call: the caller still hears the answer, and the run is written once it is back',
  async () => {
    const { t, fake, models } = app
    const agent = await createVoiceAgent(t)
    models.transcription.queue({ text: 'Can I book a table for two tonight?' })
    models.chat.queue(say('Of course. Which time suits you?'))
    const call = await placeCall(t, fake, agent)
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)

    await proxy.command('blackhole')
    call.media.speak(await callerSpeech('Can I book a table for two tonight?'))
    await waitFor('the answer played', () => marksProcessed(call.media) >= 3, 30_000)
    const spoken = models.requestsTo('/audio/speech').map((request) => request.body.input)
    expect(spoken).toEqual([GREETING, 'Of course.', 'Which time suits you?'])
    fake.hangup(call.callId)
    // the run cannot be read meanwhile: the API says the database is unavailable
    expect((await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${call.runId}`)).status).toBe(503)

    await proxy.command('forward')
    let run: Record<string, any> = {}
    await waitFor(
      'the run written once the database answers',
      async () => {
        const response = await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${call.runId}`)
        if (response.status !== 200) return false
        run = response.body
        return run.is_completed && run.transcript_url !== null
      },
      30_000,
      500,
    )
    expect(turnsOf(run)).toEqual([
      ['agent', GREETING],
      ['user', 'Can I book a table for two tonight?'],
      ['agent', 'Of course. Which time suits you?'],
    ])
    expect(run.logs.session.end_reason).toBe('user_hangup')
  },
  90_000,
)
