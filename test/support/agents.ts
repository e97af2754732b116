import type { CallType } from '../../src/db/schema'
import { attachArtifact } from '../../src/runs/artifacts'
import { createRun, getRun, finishRun, type RunOutcome } from '../../src/runs/service'
import type { TestApp } from './app'
import type { HttpClient } from './http-app'

/** A valid definition: start → end, plus an API trigger (path minted by the server unless given). */
export function sampleDefinition(options: { prompt?: string; triggerPath?: string | null } = {}) {
  return {
    nodes: [
      {
        id: '1',
        type: 'startCall',
        position: { x: 0, y: 0 },
        data: { name: 'Start', prompt: options.prompt ?? 'Greet {{first_name}}.' },
      },
      { id: '2', type: 'endCall', position: { x: 200, y: 0 }, data: { name: 'End', prompt: 'Say goodbye.' } },
      ...(options.triggerPath === null
        ? []
        : [
            {
              id: '3',
              type: 'trigger',
              position: { x: 0, y: 200 },
              data: { name: 'API', ...(options.triggerPath ? { trigger_path: options.triggerPath } : {}) },
            },
          ]),
    ],
    edges: [{ id: '1-2', source: '1', target: '2', data: { label: 'done', condition: 'The caller is done' } }],
  }
}

/** Creates an agent over the API and returns its body. */
export async function createAgent(t: HttpClient, name: string, key?: string, definition: unknown = sampleDefinition()) {
  const response = await t.request('POST', '/api/v1/workflow/create/definition', {
    key,
    body: { name, workflow_definition: definition },
  })
  if (response.status !== 200) throw new Error(`create agent: ${response.status} ${response.text}`)
  return response.body
}

export type SeedRun = {
  organizationId: number
  agent: { id: number; current_definition_id: number }
  name?: string
  mode?: string
  callType?: CallType
  initialContext?: Record<string, unknown>
  campaignId?: number
  /** Finishes the run with this outcome; left unfinished when absent. */
  outcome?: RunOutcome
  artifacts?: Partial<Record<'recording' | 'transcript' | 'user_recording' | 'bot_recording', string>>
}

/** A run as an entry point creates it, optionally finished and with artifacts (keys only). */
export function seedRun(t: TestApp, seed: SeedRun) {
  const { id } = createRun(t.ctx, {
    organizationId: seed.organizationId,
    agentId: seed.agent.id,
    definitionId: seed.agent.current_definition_id,
    name: seed.name ?? 'WR-TEST',
    mode: seed.mode ?? 'ari',
    callType: seed.callType ?? 'outbound',
    initialContext: seed.initialContext,
    campaignId: seed.campaignId,
  })
  const run = getRun(t.ctx, seed.organizationId, id)!
  if (seed.outcome) finishRun(t.ctx, run.id, seed.outcome)
  for (const [artifact, key] of Object.entries(seed.artifacts ?? {}))
    attachArtifact(t.ctx, run.id, artifact as 'recording', key)
  return run
}
