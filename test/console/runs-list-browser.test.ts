import { describe, expect } from 'bun:test'
import type { Page } from 'playwright-core'
import { createAgent } from '../support/agents'
import { consoleOnBinarySuite } from '../support/console-browser'
import type { HttpTestApp } from '../support/http-app'

/**
 * The runs list of a trigger key (one agent's runs at a time, by its id) in a real browser against the compiled binary:
 * a list that fails to load never shows what the list of the agent before it held. Photographed into
 * test-artifacts/console/runs-list/.
 */

let t: HttpTestApp
let page: Page
let base: string

const { inspect, step } = consoleOnBinarySuite(
  'runs-list',
  (started) => {
    ;({ t, page, base } = started)
  },
  { scope: 'trigger' },
)

/** A start that greets: all a text chat needs. */
const greetingDefinition = {
  nodes: [
    {
      id: 'start',
      type: 'startCall',
      position: { x: 0, y: 0 },
      data: { name: 'Start', greeting: 'Hi.', prompt: 'Help.' },
    },
  ],
  edges: [],
}

/** An agent of the admin's organization with one text chat, ended; returns its id and its run's name. */
async function agentWithARun(name: string): Promise<{ agentId: number; runName: string }> {
  const agentId = (await createAgent(t, name, undefined, greetingDefinition)).id
  const sessions = `/api/v1/workflow/${agentId}/text-chat/sessions`
  const opened = await t.request('POST', sessions, { body: {} })
  expect(opened.status, opened.text).toBe(200)
  const runId = opened.body.workflow_run_id
  const ended = await t.request('POST', `${sessions}/${runId}/end`, { body: {} })
  expect(ended.status, ended.text).toBe(200)
  const run = await t.request('GET', `/api/v1/workflow/${agentId}/runs/${runId}`)
  return { agentId, runName: run.body.name }
}

async function showRunsOf(agentId: number) {
  await page.getByLabel('Agent id').fill(String(agentId))
  await page.getByRole('button', { name: 'Show runs' }).click()
}

describe("a trigger key's runs list", () => {
  step("an agent whose runs cannot be read: its error alone, nothing of the agent's shown before", async () => {
    const { agentId, runName } = await agentWithARun('Listed')
    const elsewhere = await createAgent(t, 'Elsewhere', t.newOrg('other').key, greetingDefinition)
    await page.goto(`${base}/#/runs`)
    await showRunsOf(agentId)
    await page.getByRole('link', { name: runName }).waitFor()
    await showRunsOf(elsewhere.id)
    // another organization's agent is not found for this key: the page says so, and drops the list it showed
    await page.getByRole('alert').waitFor()
    expect(await page.getByRole('alert').textContent()).toBe(`Workflow with id ${elsewhere.id} not found`)
    expect(await page.getByRole('table').count()).toBe(0)
    expect(await page.getByRole('link', { name: runName }).count()).toBe(0)
    await inspect('runs-of-an-agent-not-found')
  })
})
