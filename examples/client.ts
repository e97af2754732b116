/**
 * A typed Ringbase client in a few lines, with openapi-fetch and types generated from the server's own document:
 *
 *   ringbase openapi > ringbase-openapi.json
 *   npx openapi-typescript ringbase-openapi.json -o examples/generated/ringbase-api.d.ts
 *
 * CI does the same and typechecks this file (test/http/openapi-client.test.ts): a document that generators cannot
 * turn into usable types fails the build.
 */
import createClient from 'openapi-fetch'
import type { components, paths } from './generated/ringbase-api'

type Agent = components['schemas']['WorkflowResponse']

/** Creates an agent, asks it to call `phoneNumber`, and reads this organization's usage. */
export async function callAndReadUsage(baseUrl: string, apiKey: string, phoneNumber: string) {
  const ringbase = createClient<paths>({ baseUrl, headers: { 'X-API-Key': apiKey } })

  const created = await ringbase.POST('/api/v1/workflow/create/definition', {
    body: {
      name: 'Reception',
      workflow_definition: {
        nodes: [
          {
            id: 'start',
            type: 'startCall',
            position: { x: 0, y: 0 },
            data: { name: 'Start', prompt: 'Greet the caller.' },
          },
          { id: 'end', type: 'endCall', position: { x: 200, y: 0 }, data: { name: 'End', prompt: 'Say goodbye.' } },
        ],
        edges: [
          { id: 'start-end', source: 'start', target: 'end', data: { label: 'done', condition: 'The caller is done' } },
        ],
      },
    },
  })
  if (created.error) throw new Error(`create agent: ${JSON.stringify(created.error.detail)}`)
  const agent: Agent = created.data

  const started = await ringbase.POST('/api/v1/public/agent/workflow/{workflow_uuid}', {
    params: { path: { workflow_uuid: agent.workflow_uuid }, header: { 'x-api-key': apiKey } },
    body: { phone_number: phoneNumber, initial_context: { first_name: 'Ada' } },
  })
  if (started.error) throw new Error(`start run: ${JSON.stringify(started.error.detail)}`)
  const runId: number = started.data.workflow_run_id

  const usage = await ringbase.GET('/api/v1/organizations/usage/runs', { params: { query: { page: 1, limit: 50 } } })
  if (usage.error) throw new Error(`usage: ${JSON.stringify(usage.error.detail)}`)
  const seconds: number = usage.data.total_duration_seconds
  return { agentId: agent.id, runId, seconds }
}
