import { describe, expect } from 'bun:test'
import { readFileSync } from 'node:fs'
import type { Page } from 'playwright-core'
import { consoleOnBinarySuite, recordPuts } from '../support/console-browser'
import type { HttpTestApp } from '../support/http-app'
import { createVoiceAgent, type VoiceAgent } from '../support/voice-calls'

/**
 * The models page's configuration form with every service, and the usage page's export, in a real browser against
 * the compiled binary (the walk of test/console/browser.test.ts covers the rest of both pages). Photographed into
 * test-artifacts/console/models-usage/.
 */

let t: HttpTestApp
let page: Page
let agents: VoiceAgent[]

const { inspect, step, go } = consoleOnBinarySuite('models-usage', async (started) => {
  ;({ t, page } = started)
  agents = [await createVoiceAgent(t), await createVoiceAgent(t)]
})

/** `count` finished runs of `agent`: text chats opened (a fixed greeting: no model asked) and ended at once. */
async function finishedChats(agent: VoiceAgent, count: number) {
  for (let started = 0; started < count; started += 10)
    await Promise.all(
      Array.from({ length: Math.min(10, count - started) }, async () => {
        const path = `/api/v1/workflow/${agent.id}/text-chat/sessions`
        const chat = await t.request('POST', path, { body: {} })
        expect(chat.status, chat.text).toBe(200)
        const ended = await t.request('POST', `${path}/${chat.body.workflow_run_id}/end`)
        expect(ended.status, ended.text).toBe(200)
      }),
    )
}

describe('the models and usage pages', () => {
  step(
    'a model configuration with every setting of every service through the form: 422s next to their fields, then stored',
    async () => {
      const [server] = (await t.request('GET', '/api/v1/organizations/provider-connections')).body.connections
      await go('/models', 'Models')
      const form = page.getByRole('form', { name: 'Add a configuration' })
      const posted: string[] = []
      const listen = (request: { method(): string; url(): string }) => {
        if (request.method() === 'POST' && request.url().endsWith('/model-configurations')) posted.push(request.url())
      }
      page.on('request', listen)
      await form.getByRole('textbox', { name: 'Name' }).fill('Full stack')
      await form.getByLabel('LLM server').selectOption({ label: server.name })
      await form.getByLabel('LLM model').fill('lab-llm')
      await form.getByLabel('LLM temperature').fill('3')
      await form.getByLabel('LLM max tokens').fill('300')
      await form.getByLabel('Speech to text server').selectOption({ label: server.name })
      await form.getByLabel('Speech to text model').fill('lab-stt')
      await form.getByLabel('Speech to text language').fill('x')
      await form.getByLabel('Speech to text streaming').selectOption({ label: 'vLLM realtime socket' })
      // a new configuration speaks with the built-in voice until a server is chosen
      expect(await form.getByLabel('Built-in voice').inputValue()).toBe('slt')
      await form.getByLabel('Text to speech server').selectOption({ label: server.name })
      await form.getByLabel('Text to speech model').fill('lab-tts')
      await form.getByLabel('Text to speech voice').fill('alloy')
      await form.getByLabel('Text to speech speed').fill('1.25')
      await form.getByLabel('Embeddings server').selectOption({ label: server.name })
      await form.getByLabel('Embeddings model').fill('lab-embed')
      await form.getByLabel('Embeddings dimensions').fill('256')
      await form.getByLabel('Realtime server').selectOption({ label: server.name })
      await form.getByLabel('Realtime model').fill('lab-realtime')
      await form.getByLabel('Realtime voice').fill('verse')
      await form.getByLabel('Realtime instructions').fill('Answer in one sentence.')
      await form.getByLabel('Realtime turn detection').selectOption({ label: 'Semantic VAD' })
      await form.getByLabel('Realtime VAD threshold').fill('0.6')
      await form.getByLabel('Realtime prefix padding (ms)').fill('300')
      await form.getByLabel('Realtime silence duration (ms)').fill('700')
      const temperature = form.getByLabel('LLM temperature')
      // the input carries the API's bounds: the browser stops a temperature the API would refuse
      await form.getByRole('button', { name: 'Add configuration' }).click()
      expect(await temperature.evaluate((input) => input.validity.rangeOverflow)).toBe(true)
      expect(posted).toEqual([])
      page.off('request', listen)
      // past the browser's check (as a browser without it would send), the API's refusal shows next to the field
      await form.evaluate((element) => {
        element.noValidate = true
      })
      await form.getByRole('button', { name: 'Add configuration' }).click()
      const errorOf = (label: string) =>
        form.locator('.field', { has: page.getByLabel(label, { exact: true }) }).locator('.field-error')
      await errorOf('LLM temperature').waitFor()
      expect(await errorOf('LLM temperature').textContent()).toBe('Input should be less than or equal to 2')
      expect(await temperature.getAttribute('aria-invalid')).toBe('true')
      const language = form.getByLabel('Speech to text language')
      expect(await errorOf('Speech to text language').textContent()).toBe('String should have at least 2 characters')
      expect(await language.getAttribute('aria-invalid')).toBe('true')
      expect(await form.getByLabel('Speech to text model').getAttribute('aria-invalid')).toBeNull()
      expect(await form.getByLabel('LLM max tokens').getAttribute('aria-invalid')).toBeNull()
      // the form's note points at the fields instead of repeating their messages
      const note = await form.getByRole('alert').textContent()
      expect(note).toBe('Not saved: 2 fields need a change (shown next to them).')
      await inspect('model-configuration-refused')
      await temperature.fill('0.7')
      await language.fill('en')
      await form.getByRole('button', { name: 'Add configuration' }).click()
      await page.getByRole('button', { name: 'Edit configuration Full stack' }).waitFor()
      const [stored] = (
        await t.request('GET', '/api/v1/organizations/model-configurations')
      ).body.configurations.filter((configuration: { name: string }) => configuration.name === 'Full stack')
      const on = (settings: Record<string, unknown>) => ({ provider_connection_uuid: server.uuid, settings })
      expect(stored).toMatchObject({
        is_default: false,
        llm: on({ model: 'lab-llm', temperature: 0.7, max_tokens: 300 }),
        stt: on({ model: 'lab-stt', language: 'en', streaming: 'vllm' }),
        tts: on({ model: 'lab-tts', voice: 'alloy', speed: 1.25 }),
        embeddings: on({ model: 'lab-embed', dimensions: 256 }),
        realtime: on({
          model: 'lab-realtime',
          voice: 'verse',
          instructions: 'Answer in one sentence.',
          turn_detection: { type: 'semantic_vad', threshold: 0.6, prefix_padding_ms: 300, silence_duration_ms: 700 },
        }),
      })
      await inspect('model-configuration-services')
    },
  )

  step('a configuration edited: prefilled with every setting, only what changed sent', async () => {
    const [stored] = (await t.request('GET', '/api/v1/organizations/model-configurations')).body.configurations.filter(
      (configuration: { name: string }) => configuration.name === 'Full stack',
    )
    await go('/models', 'Models')
    await page.getByRole('button', { name: 'Edit configuration Full stack' }).click()
    const form = page.getByRole('form', { name: 'Edit “Full stack”' })
    expect(await form.getByLabel('Speech to text language').inputValue()).toBe('en')
    expect(await form.getByLabel('Speech to text streaming').inputValue()).toBe('vllm')
    expect(await form.getByLabel('LLM temperature').inputValue()).toBe('0.7')
    expect(await form.getByLabel('Text to speech speed').inputValue()).toBe('1.25')
    expect(await form.getByLabel('Embeddings dimensions').inputValue()).toBe('256')
    expect(await form.getByLabel('Realtime voice').inputValue()).toBe('verse')
    expect(await form.getByLabel('Realtime instructions').inputValue()).toBe('Answer in one sentence.')
    expect(await form.getByLabel('Realtime turn detection').inputValue()).toBe('semantic_vad')
    expect(await form.getByLabel('Realtime silence duration (ms)').inputValue()).toBe('700')
    expect(await form.getByLabel('Organization default').isChecked()).toBe(false)
    const { sent, stop } = recordPuts(page)
    await form.getByLabel('Organization default').check()
    await form.getByLabel('Speech to text streaming').selectOption({ label: 'Off: upload each utterance' })
    await form.getByLabel('Text to speech server').selectOption({ label: 'Built-in voice (no server)' })
    await form.getByLabel('Built-in voice').selectOption('rms')
    await form.getByLabel('Realtime server').selectOption({ label: 'None' })
    await form.getByRole('button', { name: 'Save configuration' }).click()
    await form.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    stop()
    expect(sent.map((body) => JSON.parse(body))).toEqual([
      {
        is_default: true,
        stt: {
          provider_connection_uuid: stored.stt.provider_connection_uuid,
          settings: { model: 'lab-stt', language: 'en' },
        },
        tts: { builtin: true, settings: { voice: 'rms' } },
        realtime: null,
      },
    ])
    const edited = (await t.request('GET', `/api/v1/organizations/model-configurations/${stored.uuid}`)).body
    expect(edited).toMatchObject({
      is_default: true,
      llm: stored.llm,
      stt: { settings: { model: 'lab-stt', language: 'en' } },
      tts: { builtin: true, settings: { voice: 'rms' } },
      embeddings: stored.embeddings,
      realtime: null,
    })
    expect(edited.stt.settings.streaming).toBeUndefined()
    await inspect('model-configuration-edited')
  })

  step(
    'the usage export covers every run of the period (by day, agent and outcome), not the latest 100',
    async () => {
      await finishedChats(agents[0], 70)
      await finishedChats(agents[1], 50)
      const asked: string[] = []
      const listen = (request: { url(): string }) => asked.push(request.url())
      page.on('request', listen)
      await go('/usage', 'Usage and cost (last 30 days)')
      const link = page.getByRole('link', { name: /^Export CSV/ })
      await link.waitFor()
      page.off('request', listen)
      const [download] = await Promise.all([page.waitForEvent('download'), link.click()])
      expect(download.suggestedFilename()).toBe('ringbase-usage.csv')
      const csv = readFileSync((await download.path())!, 'utf8').split('\n')
      // the figures the API gives for the page's own questions, row for row
      const expected = ['group_by,key,label,runs,duration_seconds,tokens,charge_usd']
      for (const groupBy of ['day', 'agent', 'outcome']) {
        const url = new URL(asked.find((item) => item.includes(`/usage/summary?group_by=${groupBy}`))!)
        const summary = (await t.request('GET', `${url.pathname}${url.search}`)).body
        if (groupBy === 'day') expect(summary.total_runs).toBe(120)
        const groups =
          groupBy === 'day' ? summary.groups.toSorted((a: any, b: any) => a.key.localeCompare(b.key)) : summary.groups
        for (const group of groups)
          expected.push(
            [groupBy, group.key, group.label, group.runs, group.duration_seconds, group.tokens, group.charge_usd]
              .map((value) => value ?? '')
              .join(','),
          )
      }
      expect(csv).toEqual(expected)
      const runsOf = (groupBy: string) =>
        csv.filter((row) => row.startsWith(`${groupBy},`)).reduce((sum, row) => sum + Number(row.split(',')[3]), 0)
      expect([runsOf('day'), runsOf('agent'), runsOf('outcome')]).toEqual([120, 120, 120])
      const agentRows = csv.filter((row) => row.startsWith('agent,')).map((row) => row.split(','))
      expect(agentRows.map(([, id, , runs]) => [id, runs])).toEqual([
        [String(agents[0].id), '70'],
        [String(agents[1].id), '50'],
      ])
      await inspect('usage')
    },
    120_000,
  )
})
