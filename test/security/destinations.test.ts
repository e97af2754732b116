import { afterAll, afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { startAriVoiceApp } from '../support/ari-voice-app'
import { createAgent, uploadCsv } from '../support/campaigns'
import { callTool } from '../support/fake-models'
import { createVoiceAgent, marksProcessed, placeCall, runDetail, untilWritten } from '../support/voice-calls'
import { waitFor } from '../support/wait'

/**
 * Toll fraud through a destination: on an ARI configuration that does not allow raw dial strings, no destination from a
 * request (trigger), a CSV row (campaign), a transfer tool (fixed, templated from the request, chosen by the model) can
 * pick the endpoint, trunk or dialplan context dialled, nor add a second destination or dial options: only numbers and
 * extensions reach the configuration's dial_string_template. Black-box over the API, against the fake Asterisk.
 */

/** The dial string template of the configuration: numbers land in the fake's `test` context. */
const TEMPLATE = 'Local/{number}@test'

/** What a caller might try in a destination: each one would choose where the call goes, or split the dial string. */
const HOSTILE = [
  'sip:0044912345678@intl-trunk', // the probe's finding: PJSIP/0044912345678@intl-trunk
  'sips:0044912345678@intl-trunk:5061',
  'SIP:102@test',
  'PJSIP/0044912345678@intl-trunk',
  'Local/s@from-internal',
  '102@intl-trunk',
  '102/n',
  '102&Local/200@test',
  '102,tT',
  '10(2)',
  '102^x',
  '102|103',
  '${EXTEN}',
  '10 2',
  '102\t',
  '102\r\n',
  '102\u0000',
  '102\u001b',
  '102\u00a0',
  '102\u2028',
]

const app = await startAriVoiceApp({ dial_string_template: TEMPLATE })
const { t, fake, models } = app
afterAll(() => app.stop())
beforeEach(() => {
  models.reset()
  models.transcription.handler = () => ({ text: '' })
})
/** A test that failed half-way leaves no call up for the next one (a Local channel's two halves go together). */
afterEach(() => {
  for (const id of fake.liveChannelIds()) if (fake.liveChannelIds().includes(id)) fake.hangup(id)
})

const originates = () =>
  fake.requests.filter((request) => request.method === 'POST' && request.path === '/ari/channels')

describe('ARI destinations without allow_raw_dial_strings', () => {
  test('trigger: every hostile phone_number is refused before anything is dialled; a number goes through the template', async () => {
    const agent = await createVoiceAgent(t)
    const before = originates().length
    for (const phoneNumber of HOSTILE) {
      const response = await t.request('POST', `/api/v1/public/agent/${agent.triggerPath}`, {
        body: { phone_number: phoneNumber },
      })
      expect(response.status, `${JSON.stringify(phoneNumber)}: ${response.text}`).toBe(400)
      expect(response.body.detail).toStartWith('phone_number ')
    }
    expect(originates().length).toBe(before)
    const call = await placeCall(t, fake, agent, {}, '102')
    expect(originates().at(-1)?.query.endpoint).toBe('Local/102@test')
    fake.hangup(call.callId)
  }, 30_000)

  test('campaign: every hostile CSV row is named and the campaign refused', async () => {
    const workflowId = await createAgent(t)
    // Values a CSV cell can hold as written (quoted); leading and trailing blanks are trimmed away, so they stay out.
    const rows = HOSTILE.filter((value) => value.trim() === value)
    const csv = ['phone_number', '102', ...rows.map((value) => `"${value.replace(/"/g, '""')}"`)].join('\n') + '\n'
    const response = await t.request('POST', '/api/v1/campaign/create', {
      body: { name: 'Fraud', source_type: 'csv', workflow_id: workflowId, source_id: await uploadCsv(t, csv) },
    })
    expect(response.status, response.text).toBe(400)
    // The header is row 1 and '102' row 2: every other row is named (the first five, then how many more).
    expect(response.body.detail).toStartWith(
      `Invalid phone numbers in rows: 3, 4, 5, 6, 7 and ${rows.length - 5} more.`,
    )
  })

  test('transfer_call: a fixed, a templated (from the request) and a model-chosen SIP URI all fail before anything is dialled; a number is dialled through the template', async () => {
    const tool = async (name: string, config: Record<string, unknown>) => {
      const response = await t.request('POST', '/api/v1/tools/', {
        body: { name, definition: { type: 'transfer_call', config: { timeout: 20, ...config } } },
      })
      expect(response.status, response.text).toBe(200)
      return response.body.tool_uuid as string
    }
    const tools = [
      await tool('Fixed', { destination: 'sip:0044912345678@intl-trunk' }),
      await tool('Templated', { destination: '{{dest}}' }),
      await tool('Choice', {
        destination_source: 'llm_choice',
        destinations: [
          { name: 'intl', destination: 'sip:0044912345678@intl-trunk' },
          { name: 'raw', destination: 'PJSIP/0044912345678@intl-trunk' },
          { name: 'desk', destination: '102' },
        ],
      }),
    ]
    const agent = await createVoiceAgent(t, { start: { tool_uuids: tools } })
    models.chat.queue(
      callTool('fixed', {}),
      callTool('templated', {}),
      callTool('choice', { destination: 'intl' }),
      callTool('choice', { destination: 'raw' }),
      callTool('choice', { destination: 'desk' }),
    )
    const call = await placeCall(t, fake, agent, { dest: 'sip:0044912345678@intl-trunk' }, '102')
    await waitFor('the greeting played', () => marksProcessed(call.media) >= 1, 5_000)
    for (const digit of ['0', '#']) fake.dtmf(call.callId, digit)

    const destinationId = `${call.callId}-transfer`
    await waitFor(
      "the desk in the caller's bridge",
      () => fake.bridgeChannels(`ringbase-${call.callId}`)?.includes(destinationId) === true,
      15_000,
    )
    const transfers = fake.requests.filter(
      (request) => request.path === '/ari/channels' && request.query.appArgs?.startsWith('transfer,'),
    )
    expect(transfers.map((request) => request.query.endpoint)).toEqual(['Local/102@test'])
    await waitFor(
      'the conversation over',
      async () => (await runDetail(t, agent, call.runId)).logs.voice !== undefined,
      10_000,
    )
    fake.hangup(destinationId)
    const run = await untilWritten(t, agent, call.runId)
    expect(
      run.logs.tool_calls.map((entry: { function_name: string; status: string }) => [
        entry.function_name,
        entry.status,
      ]),
    ).toEqual([
      ['fixed', 'error'],
      ['templated', 'error'],
      ['choice', 'error'],
      ['choice', 'error'],
      ['choice', 'success'],
    ])
    const refusals = models
      .requestsTo('/chat/completions')
      .flatMap((request) => request.body.messages as { role: string; content: string }[])
      .filter((message) => message.role === 'tool')
      .map((message) => message.content)
    expect(refusals.slice(0, 4).every((content) => content.includes('allow_raw_dial_strings'))).toBe(true)
  }, 30_000)
})
