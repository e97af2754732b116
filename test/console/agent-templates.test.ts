import { afterAll, describe, expect, test } from 'bun:test'
import { createTestApp } from '../support/app'
import { AGENT_TEMPLATES, templateDefinition, transferToolBody } from '../../web/agents/templates'

/** The console's agent templates are definitions the API takes as they are: each one creates an agent. */
const t = createTestApp()
afterAll(() => t.close())

describe("the console's agent templates", () => {
  for (const template of AGENT_TEMPLATES) {
    test(`"${template.title}" creates an agent, its definition stored as sent`, async () => {
      const definition = templateDefinition(template)
      const created = await t.request('POST', '/api/v1/workflow/create/definition', {
        body: { name: template.title, workflow_definition: definition },
      })
      expect(created.status, created.text).toBe(200)
      expect(created.body.workflow_definition).toEqual(definition)
    })
  }

  test('the receptionist with a transfer number: the tool is created and its node names it', async () => {
    const tool = await t.request('POST', '/api/v1/tools/', { body: transferToolBody('+15550100') })
    expect(tool.status, tool.text).toBe(200)
    const receptionist = AGENT_TEMPLATES.find((template) => template.key === 'receptionist')!
    const definition = templateDefinition(receptionist, tool.body.tool_uuid)
    const created = await t.request('POST', '/api/v1/workflow/create/definition', {
      body: { name: 'Reception', workflow_definition: definition },
    })
    expect(created.status, created.text).toBe(200)
    const transfer = created.body.workflow_definition.nodes.find((node: { id: string }) => node.id === 'transfer')
    expect(transfer.data.tool_uuids).toEqual([tool.body.tool_uuid])
  })
})
