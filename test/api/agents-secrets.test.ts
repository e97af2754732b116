import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { createTestApp, type TestApp } from '../support/app'
import { sampleDefinition } from '../support/agents'
import { failInsertsInto } from '../support/postgres-databases'

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

const QA_KEY = 'sk-qa-S3cr3t-0001'
const TUNER_KEY = 'tn-S3cr3t-tuner-0002'
const mask = (secret: string) => '*'.repeat(secret.length - 4) + secret.slice(-4)

/** The sample definition plus a quality-review node (id 'qa') and a tuner node (id 'tuner') holding credentials. */
function definitionWithSecrets(secrets: { qa?: string; tuner?: string } = {}) {
  const definition = sampleDefinition({ triggerPath: 'secrets-agent' })
  return {
    ...definition,
    nodes: [
      ...definition.nodes,
      {
        id: 'qa',
        type: 'qa',
        position: { x: 0, y: 400 },
        data: {
          name: 'Review',
          qa_use_workflow_llm: false,
          qa_provider: 'openai',
          qa_model: 'gpt-4o',
          qa_api_key: secrets.qa ?? QA_KEY,
        },
      },
      {
        id: 'tuner',
        type: 'tuner',
        position: { x: 0, y: 600 },
        data: {
          name: 'Tuning',
          tuner_agent_id: 'agent-1',
          tuner_workspace_id: 42,
          tuner_api_key: secrets.tuner ?? TUNER_KEY,
        },
      },
    ],
  }
}

const nodeData = (definition: any, id: string) => definition.nodes.find((node: any) => node.id === id).data

function expectMasked(definition: any, secrets: { qa: string; tuner: string } = { qa: QA_KEY, tuner: TUNER_KEY }) {
  expect(nodeData(definition, 'qa').qa_api_key).toBe(mask(secrets.qa))
  expect(nodeData(definition, 'tuner').tuner_api_key).toBe(mask(secrets.tuner))
}

/** The definitions of every version as stored, newest first. */
function storedDefinitions(workflowId: number): any[] {
  return t.ctx.sqlite
    .query<{ workflow_json: string }, [number]>(
      'SELECT workflow_json FROM workflow_definitions WHERE workflow_id = ? ORDER BY version_number DESC',
    )
    .all(workflowId)
    .map((row) => JSON.parse(row.workflow_json))
}

async function createWithSecrets() {
  const response = await t.request('POST', '/api/v1/workflow/create/definition', {
    body: { name: 'Reviewed', workflow_definition: definitionWithSecrets() },
  })
  expect(response.status).toBe(200)
  return response.body
}

const put = (id: number, definition: unknown) =>
  t.request('PUT', `/api/v1/workflow/${id}`, { body: { workflow_definition: definition } })

describe('credentials in node data', () => {
  test('are masked in every response that returns a definition, and stored as sent', async () => {
    const created = await createWithSecrets()
    expectMasked(created.workflow_definition)
    // Everything else in the definition is returned as stored.
    expect(nodeData(created.workflow_definition, 'qa')).toEqual({
      ...nodeData(definitionWithSecrets(), 'qa'),
      qa_api_key: mask(QA_KEY),
    })

    const fetched = await t.request('GET', `/api/v1/workflow/fetch/${created.id}`)
    expectMasked(fetched.body.workflow_definition)

    const drafted = await put(created.id, definitionWithSecrets())
    expect(drafted.status).toBe(200)
    expectMasked(drafted.body.workflow_definition)

    const published = await t.request('POST', `/api/v1/workflow/${created.id}/publish`)
    expectMasked(published.body.workflow_definition)
    const archived = await t.request('PUT', `/api/v1/workflow/${created.id}/status`, { body: { status: 'archived' } })
    expectMasked(archived.body.workflow_definition)

    const versions = await t.request('GET', `/api/v1/workflow/${created.id}/versions`)
    expect(versions.body).toHaveLength(2)
    for (const version of versions.body) expectMasked(version.workflow_json)

    for (const stored of storedDefinitions(created.id)) {
      expect(nodeData(stored, 'qa').qa_api_key).toBe(QA_KEY)
      expect(nodeData(stored, 'tuner').tuner_api_key).toBe(TUNER_KEY)
    }
  })

  test('no response and no log line carries a credential in clear', async () => {
    const created = await createWithSecrets()
    const texts = [
      (await t.request('GET', `/api/v1/workflow/fetch/${created.id}`)).text,
      (await put(created.id, definitionWithSecrets())).text,
      (await t.request('GET', `/api/v1/workflow/${created.id}/versions`)).text,
      (await t.request('GET', '/api/v1/workflow/fetch')).text,
      t.logText(),
    ]
    for (const text of texts) {
      expect(text).not.toContain(QA_KEY)
      expect(text).not.toContain(TUNER_KEY)
    }
  })

  test('a failed save does not log them either', async () => {
    failInsertsInto(t, 'workflow_definitions', 'disk full')
    const response = await t.request('POST', '/api/v1/workflow/create/definition', {
      body: { name: 'Lost', workflow_definition: definitionWithSecrets() },
    })
    expect(response.status).toBe(500)
    expect(t.logText()).toContain('disk full')
    expect(t.logText()).not.toContain(QA_KEY)
    expect(t.logText()).not.toContain(TUNER_KEY)
  })

  test('sending back the definition as fetched keeps the stored credentials', async () => {
    const created = await createWithSecrets()
    const fetched = (await t.request('GET', `/api/v1/workflow/fetch/${created.id}`)).body
    const edited = structuredClone(fetched.workflow_definition)
    nodeData(edited, '1').prompt = 'Greet warmly.'
    const saved = await put(created.id, edited)
    expect(saved.status).toBe(200)
    expect(saved.body).toMatchObject({ version_number: 2, version_status: 'draft' })
    expectMasked(saved.body.workflow_definition)
    const [draft] = storedDefinitions(created.id)
    expect(nodeData(draft, '1').prompt).toBe('Greet warmly.')
    expect(nodeData(draft, 'qa').qa_api_key).toBe(QA_KEY)
    expect(nodeData(draft, 'tuner').tuner_api_key).toBe(TUNER_KEY)

    // A second round trip on the draft keeps them too.
    await put(created.id, saved.body.workflow_definition)
    expect(nodeData(storedDefinitions(created.id)[0], 'tuner').tuner_api_key).toBe(TUNER_KEY)
  })

  test('a new value replaces the stored one; a mask that does not match is a new value', async () => {
    const created = await createWithSecrets()
    const otherMask = `*${mask(QA_KEY)}`
    const saved = await put(created.id, definitionWithSecrets({ qa: otherMask, tuner: 'tn-new-key-9999' }))
    expect(saved.status).toBe(200)
    expectMasked(saved.body.workflow_definition, { qa: otherMask, tuner: 'tn-new-key-9999' })
    const [draft, first] = storedDefinitions(created.id)
    expect(nodeData(draft, 'qa').qa_api_key).toBe(otherMask)
    expect(nodeData(draft, 'tuner').tuner_api_key).toBe('tn-new-key-9999')
    expect(nodeData(first, 'tuner').tuner_api_key).toBe(TUNER_KEY)
  })

  test('a mask is only matched against the node with the same id', async () => {
    const created = await createWithSecrets()
    const moved = definitionWithSecrets({ tuner: mask(TUNER_KEY) })
    moved.nodes = moved.nodes.map((node) => (node.id === 'tuner' ? { ...node, id: 'tuner-2' } : node))
    expect((await put(created.id, moved)).status).toBe(200)
    expect(nodeData(storedDefinitions(created.id)[0], 'tuner-2').tuner_api_key).toBe(mask(TUNER_KEY))
  })

  test('credentials of four characters or fewer are masked entirely', async () => {
    const response = await t.request('POST', '/api/v1/workflow/create/definition', {
      body: { name: 'Short', workflow_definition: definitionWithSecrets({ qa: 'abcd', tuner: 'xyz' }) },
    })
    expect(nodeData(response.body.workflow_definition, 'qa').qa_api_key).toBe('****')
    expect(nodeData(response.body.workflow_definition, 'tuner').tuner_api_key).toBe('***')
    const roundTrip = await put(response.body.id, response.body.workflow_definition)
    expect(roundTrip.status).toBe(200)
    const [draft] = storedDefinitions(response.body.id)
    expect(nodeData(draft, 'qa').qa_api_key).toBe('abcd')
    expect(nodeData(draft, 'tuner').tuner_api_key).toBe('xyz')
  })
})
