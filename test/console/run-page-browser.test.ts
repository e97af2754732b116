import { describe, expect } from 'bun:test'
import type { Page } from 'playwright-core'
import { createAgent } from '../support/agents'
import { type ConsoleBrowser, consoleOnBinarySuite } from '../support/console-browser'
import { say, type FakeModels } from '../support/fake-models'
import type { HttpTestApp } from '../support/http-app'
import { startTcpProxy } from '../support/tcp-proxy'
import { waitFor } from '../support/wait'

/**
 * A run's page in a real browser against the compiled binary: its usage as a table a person reads, and the page
 * following the run (its end, its webhook deliveries) without a reload. Runs are text chats with the fake model server
 * (the walk of test/console/browser.test.ts covers the rest of the page). Photographed into
 * test-artifacts/console/run-page/.
 */

let t: HttpTestApp
let models: FakeModels
let consoleBrowser: ConsoleBrowser
let page: Page
let base: string

const { inspect, step } = consoleOnBinarySuite('run-page', (started) => {
  ;({ t, models, consoleBrowser, page, base } = started)
})

const node = (id: string, type: string, data: Record<string, unknown>) => ({ id, type, position: { x: 0, y: 0 }, data })

/** An agent that greets with a fixed line, plus `extra` nodes; returns its id. */
async function agentWith(name: string, ...extra: ReturnType<typeof node>[]): Promise<number> {
  const agent = await createAgent(t, name, undefined, {
    nodes: [node('start', 'startCall', { name: 'Start', greeting: 'Hi.', prompt: 'Help.' }), ...extra],
    edges: [],
  })
  return agent.id
}

const sessionsOf = (agentId: number) => `/api/v1/workflow/${agentId}/text-chat/sessions`

/** Opens a text chat of the agent; returns its run's id. */
async function openChat(agentId: number): Promise<number> {
  const opened = await t.request('POST', sessionsOf(agentId), { body: {} })
  expect(opened.status, opened.text).toBe(200)
  return opened.body.workflow_run_id
}

async function endChat(agentId: number, runId: number): Promise<void> {
  const ended = await t.request('POST', `${sessionsOf(agentId)}/${runId}/end`, { body: {} })
  expect(ended.status, ended.text).toBe(200)
}

const runPath = (agentId: number, runId: number) => `/api/v1/workflow/${agentId}/runs/${runId}`

/** A webhook receiver on 127.0.0.1 that holds every request until `answer()`, then answers each with 200. */
function startHoldingReceiver() {
  const received: string[] = []
  const held = Promise.withResolvers<void>()
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      received.push(new URL(request.url).pathname)
      await held.promise
      return new Response('ok')
    },
  })
  return { url: `http://127.0.0.1:${server.port}/calls`, received, answer: held.resolve, stop: () => server.stop(true) }
}

/** Marks the document, so a test can tell later that the page was not loaded again. */
const markPage = () => page.evaluate('window.notReloaded = true')
const stillMarked = () => page.evaluate('window.notReloaded === true')

/** A text chat still open, its page shown (in progress; from `origin`) and marked; its state fact, to watch. */
async function runPageInProgress(agentName: string, origin = base) {
  const agentId = await agentWith(agentName)
  const runId = await openChat(agentId)
  await page.goto(`${origin}/#/runs/${agentId}/${runId}`)
  const state = page.locator('.facts div', { hasText: 'State' })
  await state.locator('.badge', { hasText: 'in progress' }).waitFor()
  await markPage()
  return { agentId, runId, state }
}

describe("a run's page", () => {
  step(
    'usage: a row per service and model used, named for a person; no internal key, nothing for a service unused',
    async () => {
      const agentId = await agentWith('Reviewed', node('review', 'qa', { name: 'Review', qa_min_call_duration: 0 }))
      const runId = await openChat(agentId)
      models.chat.queue(
        say('Sure.', { usage: { prompt_tokens: 120, completion_tokens: 34 } }),
        say(JSON.stringify({ tags: [], overall_sentiment: 'positive', score: 9, summary: 'Helpful.' }), {
          usage: { prompt_tokens: 300, completion_tokens: 20 },
        }),
      )
      const message = await t.request('POST', `${sessionsOf(agentId)}/${runId}/messages`, { body: { text: 'Hello' } })
      expect(message.status, message.text).toBe(200)
      await endChat(agentId, runId)
      await waitFor(
        'the QA review written with its usage',
        async () =>
          'QAAnalysis|||fake-llm' in ((await t.request('GET', runPath(agentId, runId))).body.usage_info.llm ?? {}),
        15_000,
        20,
      )
      await page.goto(`${base}/#/runs/${agentId}/${runId}`)
      const usage = page.getByRole('region', { name: 'Usage' })
      await usage.locator('tbody tr').first().waitFor()
      const rows = await usage
        .locator('tbody tr')
        .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)))
      expect(rows).toEqual([
        ['Language model', 'openai', 'fake-llm', '120 input tokens, 34 output tokens, 154 tokens in all'],
        ['Language model (QA review)', '—', 'fake-llm', '300 input tokens, 20 output tokens, 320 tokens in all'],
      ])
      expect(await usage.locator('thead th').allTextContents()).toEqual(['Service', 'Provider', 'Model', 'Used'])
      const text = (await usage.textContent()) ?? ''
      expect(text).not.toContain('|||')
      expect(text).not.toContain('{}')
      expect(text).not.toContain('Speech')
      await inspect('run-usage')
    },
    60_000,
  )

  step(
    'a run in progress: the page shows it ending without a reload',
    async () => {
      const { agentId, runId, state } = await runPageInProgress('Followed')
      await endChat(agentId, runId)
      await state.locator('.badge', { hasText: 'completed' }).waitFor({ timeout: 10_000 })
      await page.locator('.facts div', { hasText: 'Disposition' }).getByText('user_hangup').waitFor()
      expect(await stillMarked()).toBe(true)
    },
    60_000,
  )

  step(
    'offline while the run ended: the page keeps what it showed, and catches up once back online, without a reload',
    async () => {
      const { agentId, runId, state } = await runPageInProgress('Reconnected')
      await consoleBrowser.context.setOffline(true)
      try {
        await endChat(agentId, runId)
        // the page hears of the end, and cannot read it: it keeps the run as it was, with the error above
        await page.getByRole('alert').first().waitFor()
        expect(await page.getByRole('alert').allTextContents()).toContain(
          'The server could not be reached (the network, or the server down). Try again in a moment.',
        )
        expect(await state.locator('.badge').textContent()).toBe('in progress')
      } finally {
        await consoleBrowser.context.setOffline(false)
      }
      await state.locator('.badge', { hasText: 'completed' }).waitFor({ timeout: 15_000 })
      expect(await stillMarked()).toBe(true)
    },
    60_000,
  )

  step(
    'its event stream cut while the run ended: the page catches up when the stream reconnects, without a reload',
    async () => {
      // The browser reaches the binary through the proxy (the session cookie is the host's, whatever the port); the
      // test's own requests go straight to the binary.
      const proxy = await startTcpProxy(new URL(base).port)
      try {
        const { agentId, runId, state } = await runPageInProgress('Cut off', `http://127.0.0.1:${proxy.port}`)
        await proxy.command('refuse')
        await endChat(agentId, runId)
        // the page tried to hear of it after the end (a reconnection, refused), and shows the run as it was
        const attempt = await page.waitForEvent('request', {
          predicate: (request) => new URL(request.url()).pathname === '/api/v1/events',
          timeout: 5_000,
        })
        expect(await attempt.response()).toBeNull()
        expect(await state.locator('.badge').textContent()).toBe('in progress')
        const reconnected = page.waitForEvent('response', {
          predicate: (response) => new URL(response.url()).pathname === '/api/v1/events',
          timeout: 5_000,
        })
        await proxy.command('forward')
        // the stream comes back (the server's `retry: 3000` away), and its snapshot is the page's cue to read the run
        expect((await reconnected).status()).toBe(200)
        await state.locator('.badge', { hasText: 'completed' }).waitFor({ timeout: 5_000 })
        expect(await stillMarked()).toBe(true)
      } finally {
        proxy.stop()
      }
    },
    30_000,
  )

  step(
    'a webhook delivery pending when the page opens shows delivered once it is, without a reload',
    async () => {
      const receiver = startHoldingReceiver()
      try {
        const agentId = await agentWith(
          'Delivering',
          node('crm', 'webhook', { name: 'CRM', endpoint_url: receiver.url }),
        )
        const runId = await openChat(agentId)
        await endChat(agentId, runId)
        await waitFor('the delivery sent and held by the receiver', () => receiver.received.length === 1, 15_000)
        await page.goto(`${base}/#/runs/${agentId}/${runId}`)
        const delivery = page.getByRole('region', { name: 'Webhook deliveries' }).locator('tbody tr')
        await delivery.locator('.badge', { hasText: 'pending' }).waitFor()
        await inspect('run-webhook-pending')
        await markPage()
        receiver.answer()
        await delivery.locator('.badge', { hasText: 'delivered' }).waitFor({ timeout: 10_000 })
        expect(await delivery.locator('li').allTextContents()).toEqual([
          expect.stringMatching(/^#1 .+: delivered \(HTTP 200\)$/),
        ])
        expect(await stillMarked()).toBe(true)
        await inspect('run-webhook-delivered')
      } finally {
        receiver.stop()
      }
    },
    60_000,
  )
})
