import { describe, expect, test } from 'bun:test'
import {
  findTriggerNodes,
  validateDefinition,
  type DefinitionError,
  type AgentDefinition,
} from '../../src/definition/definition'

type Json = Record<string, any>

const node = (id: string, type: string, data: Json = {}): Json => ({ id, type, position: { x: 0, y: 0 }, data })
const start = (data: Json = {}) => node('1', 'startCall', { name: 'Start', prompt: 'Greet the caller.', ...data })
const agent = (id: string, data: Json = {}) => node(id, 'agentNode', { prompt: 'Help the caller.', ...data })
const end = (id: string, data: Json = {}) => node(id, 'endCall', { prompt: 'Say goodbye.', ...data })
const edge = (id: string, source: string, target: string, data: Json = {}): Json => ({
  id,
  source,
  target,
  data: { label: `to ${target}`, condition: 'when it is time', ...data },
})

/** Start → Agent → End, the shape clients send. */
const valid = (): Json => ({
  nodes: [start(), agent('2'), end('3')],
  edges: [edge('1-2', '1', '2'), edge('2-3', '2', '3')],
  viewport: { x: 0, y: 0, zoom: 1 },
})

const withNodes = (...extra: Json[]) => {
  const definition = valid()
  definition.nodes.push(...extra)
  return definition
}

const errorsOf = (input: unknown) => validateDefinition(input).errors

const expectError = (input: unknown, expected: Partial<DefinitionError>) =>
  expect(errorsOf(input)).toContainEqual(expect.objectContaining(expected))

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('validateDefinition: a valid definition', () => {
  test('passes unchanged, with no trigger paths', () => {
    const input = valid()
    const result = validateDefinition(input)
    expect(result).toEqual({ definition: input as AgentDefinition, errors: [], triggerPaths: [] })
    expect(result.definition).not.toBe(input)
  })

  test('a Start Call node alone is enough; position, viewport and data of a trigger are optional', () => {
    expect(errorsOf({ nodes: [start()], edges: [] })).toEqual([])
    expect(
      errorsOf({
        nodes: [
          { id: '1', type: 'startCall', data: { prompt: 'Hi' } },
          { id: '2', type: 'trigger' },
        ],
        edges: [],
      }),
    ).toEqual([])
  })

  test('data keys the catalog does not declare are kept, null optionals count as absent', () => {
    const input = withNodes()
    input.nodes[1].data = {
      ...input.nodes[1].data,
      future_setting: { any: 'shape' },
      allow_interrupt: null,
      tool_uuids: null,
    }
    input.nodes[1].extra = 'kept'
    input.edges[0].data.ui_colour = 'blue'
    const result = validateDefinition(input)
    expect(result.errors).toEqual([])
    expect(result.definition).toEqual(input as AgentDefinition)
  })

  test('every optional field of every node type, well typed', () => {
    const input = withNodes(
      node('4', 'globalNode', { name: 'Persona', prompt: 'Be kind.' }),
      node('5', 'webhook', {
        enabled: true,
        http_method: 'PATCH',
        endpoint_url: 'https://example.com/hook',
        credential_uuid: 'c-1',
        custom_headers: [{ key: 'X-Token', value: 'abc' }],
        payload_template: { run: '{{run_id}}' },
      }),
      node('6', 'qa', {
        qa_enabled: true,
        qa_min_call_duration: 0,
        qa_sample_rate: 50.5,
        qa_provider: 'azure',
        qa_endpoint: '',
      }),
      node('7', 'tuner', { tuner_enabled: false, tuner_agent_id: 'a', tuner_workspace_id: 3, tuner_api_key: 'k' }),
    )
    input.nodes[0].data = {
      ...input.nodes[0].data,
      greeting_type: 'audio',
      greeting_recording_id: 'rec-1',
      delayed_start: true,
      delayed_start_duration: 0.5,
      extraction_enabled: true,
      extraction_variables: [
        { name: 'age', type: 'number' },
        { name: 'ok', type: 'boolean', prompt: 'Did they agree?' },
      ],
      tool_uuids: ['t-1'],
      document_uuids: [],
      pre_call_fetch_enabled: true,
      pre_call_fetch_url: 'https://example.com/lookup',
    }
    input.edges[0].data = { ...input.edges[0].data, transition_speech: 'One moment.', transition_speech_type: 'text' }
    expect(errorsOf(input)).toEqual([])
  })
})

describe('validateDefinition: the definition object', () => {
  test.each([[null], [[]], ['nodes'], [3]])('%p is not a definition', (input: unknown) => {
    expect(validateDefinition(input)).toEqual({
      definition: { nodes: [], edges: [] },
      errors: [{ kind: 'workflow', id: null, field: null, message: 'Workflow definition must be a JSON object' }],
      triggerPaths: [],
    })
  })

  test('nodes and edges must be lists', () => {
    expect(errorsOf({})).toEqual([
      { kind: 'workflow', id: null, field: 'nodes', message: 'nodes must be a list' },
      { kind: 'workflow', id: null, field: 'edges', message: 'edges must be a list' },
    ])
    expectError({ nodes: {}, edges: [] }, { kind: 'workflow', field: 'nodes' })
    expectError({ nodes: [start()] }, { kind: 'workflow', field: 'edges' })
  })

  test('viewport, when sent, has numeric x, y and zoom', () => {
    expectError({ ...valid(), viewport: { x: 0, y: 0 } }, { kind: 'workflow', field: 'viewport' })
    expectError({ ...valid(), viewport: 'wide' }, { kind: 'workflow', field: 'viewport' })
  })
})

describe('validateDefinition: nodes', () => {
  test('exactly one Start Call node', () => {
    expect(errorsOf({ nodes: [agent('2')], edges: [] })).toEqual([
      { kind: 'workflow', id: null, field: null, message: 'A workflow needs exactly 1 Start Call node' },
    ])
    expect(errorsOf(withNodes({ ...start(), id: '9' }))).toEqual([
      { kind: 'node', id: '9', field: null, message: 'A workflow may have at most 1 Start Call node' },
    ])
  })

  test('at most one Global, QA and Tuner node; any number of agents, ends, triggers and webhooks', () => {
    const tuner = (id: string) => node(id, 'tuner', { tuner_agent_id: 'a', tuner_workspace_id: 1, tuner_api_key: 'k' })
    expect(errorsOf(withNodes(node('4', 'globalNode'), node('5', 'globalNode')))).toEqual([
      { kind: 'node', id: '5', field: null, message: 'A workflow may have at most 1 Global node' },
    ])
    expectError(withNodes(node('4', 'qa'), node('5', 'qa')), {
      kind: 'node',
      id: '5',
      message: 'A workflow may have at most 1 Quality Review node',
    })
    expectError(withNodes(tuner('4'), tuner('5')), {
      kind: 'node',
      id: '5',
      message: 'A workflow may have at most 1 Tuner node',
    })
    const many = withNodes(
      node('4', 'trigger'),
      node('5', 'trigger'),
      node('6', 'webhook'),
      node('7', 'webhook'),
      agent('8'),
      end('9'),
    )
    many.edges.push(edge('1-8', '1', '8'), edge('8-9', '8', '9'))
    expect(errorsOf(many)).toEqual([])
  })

  test.each([
    ['not an object', 'node', { kind: 'node', id: null, field: null, message: 'nodes[3] must be an object' }],
    [
      'without id',
      { type: 'agentNode', data: { prompt: 'x' } },
      { kind: 'node', id: null, field: 'id', message: 'nodes[3] needs an id: a non-empty string' },
    ],
    ['with an empty id', node('', 'agentNode', { prompt: 'x' }), { kind: 'node', id: null, field: 'id' }],
    ['with a numeric id', { ...agent('x'), id: 4 }, { kind: 'node', id: null, field: 'id' }],
    [
      'with an id already used',
      agent('2'),
      { kind: 'node', id: '2', field: 'id', message: "Node id '2' is used by more than one node" },
    ],
    [
      'of an unknown type',
      node('4', 'decisionNode'),
      { kind: 'node', id: '4', field: 'type', message: "Unknown node type 'decisionNode'" },
    ],
    [
      'without a type',
      { id: '4', data: {} },
      { kind: 'node', id: '4', field: 'type', message: 'Node type must be a string' },
    ],
    [
      'with data that is not an object',
      { ...agent('4'), data: ['prompt'] },
      { kind: 'node', id: '4', field: 'data', message: 'data must be an object' },
    ],
    [
      'with a bad position',
      { ...agent('4'), position: { x: '1', y: 2 } },
      { kind: 'node', id: '4', field: 'position' },
    ],
  ])('a node %s is an error', (_, extra, expected) => {
    expectError(withNodes(extra as Json), expected as Partial<DefinitionError>)
  })

  test.each([
    ['startCall', start({ prompt: undefined })],
    ['agentNode', agent('2', { prompt: undefined })],
    ['endCall', end('3', { prompt: undefined })],
  ])('%s needs a prompt, and not an empty one', (_, broken) => {
    const input = valid()
    const index = input.nodes.findIndex((n: Json) => n.id === broken.id)
    input.nodes[index] = broken
    expect(errorsOf(input)).toEqual([
      { kind: 'node', id: broken.id, field: 'data.prompt', message: 'Prompt is required' },
    ])
    input.nodes[index] = { ...broken, data: { ...broken.data, prompt: '' } }
    expect(errorsOf(input)).toEqual([
      { kind: 'node', id: broken.id, field: 'data.prompt', message: 'Prompt must be at least 1 character long' },
    ])
  })

  test('a Global node does not need a prompt; a Tuner node needs its three settings', () => {
    expect(errorsOf(withNodes(node('4', 'globalNode')))).toEqual([])
    expect(errorsOf(withNodes(node('4', 'tuner'))).map((error) => error.field)).toEqual([
      'data.tuner_agent_id',
      'data.tuner_workspace_id',
      'data.tuner_api_key',
    ])
  })

  test.each([
    [
      'a boolean as a string',
      { allow_interrupt: 'yes' },
      'data.allow_interrupt',
      'Allow interruption must be true or false',
    ],
    [
      'a number as a string',
      { delayed_start_duration: '2' },
      'data.delayed_start_duration',
      'Delay (seconds) must be a number',
    ],
    [
      'a number above its maximum',
      { delayed_start_duration: 11 },
      'data.delayed_start_duration',
      'Delay (seconds) must be at most 10',
    ],
    [
      'a value outside the options',
      { greeting_type: 'video' },
      'data.greeting_type',
      'Greeting type must be one of "text", "audio"',
    ],
    ['a prompt that is not text', { prompt: 42 }, 'data.prompt', 'Prompt must be a string'],
    ['tool references that are not strings', { tool_uuids: [1] }, 'data.tool_uuids', 'Tools must be a list of strings'],
    [
      'a collection that is not a list',
      { extraction_variables: {} },
      'data.extraction_variables',
      'Variables to extract must be a list of rows',
    ],
    [
      'a row that is not an object',
      { extraction_variables: ['age'] },
      'data.extraction_variables[0]',
      'Row 1 of Variables to extract must be an object',
    ],
    [
      'a row without a required field',
      { extraction_variables: [{ type: 'string' }] },
      'data.extraction_variables[0].name',
      'Variable name is required',
    ],
    [
      'a row with a value outside the options',
      { extraction_variables: [{ name: 'a', type: 'date' }] },
      'data.extraction_variables[0].type',
      'Type must be one of "string", "number", "boolean"',
    ],
  ])('Start Call data with %s', (_, data, field, message) => {
    const input = valid()
    input.nodes[0] = start(data)
    expect(errorsOf(input)).toEqual([{ kind: 'node', id: '1', field, message }])
  })

  test('webhook headers, payload and method are checked too', () => {
    const webhook = node('4', 'webhook', {
      http_method: 'post',
      custom_headers: [{ key: 'X-A' }],
      payload_template: [],
    })
    expect(errorsOf(withNodes(webhook)).map((error) => error.field)).toEqual([
      'data.http_method',
      'data.custom_headers[0].value',
      'data.payload_template',
    ])
  })

  test('every error of a definition is reported, not only the first', () => {
    const input = withNodes(node('4', 'nope'), agent('5', { prompt: 1, allow_interrupt: 'no' }))
    input.edges.push(edge('2-9', '2', 'missing'))
    expect(errorsOf(input).map(({ kind, id, field }) => [kind, id, field])).toEqual([
      ['node', '4', 'type'],
      ['node', '5', 'data.prompt'],
      ['node', '5', 'data.allow_interrupt'],
      ['edge', '2-9', 'target'],
    ])
  })
})

describe('validateDefinition: edges', () => {
  test.each([
    ['not an object', 7, { kind: 'edge', id: null, field: null, message: 'edges[2] must be an object' }],
    [
      'without id',
      { ...edge('x', '2', '3'), id: undefined },
      { kind: 'edge', id: null, field: 'id', message: 'edges[2] needs an id: a non-empty string' },
    ],
    [
      'with an id already used',
      edge('1-2', '1', '3'),
      { kind: 'edge', id: '1-2', field: 'id', message: "Edge id '1-2' is used by more than one edge" },
    ],
    [
      'from a node that does not exist',
      edge('9-3', '9', '3'),
      { kind: 'edge', id: '9-3', field: 'source', message: 'source "9" is not the id of a node of this workflow' },
    ],
    [
      'to nowhere',
      { ...edge('2-x', '2', '3'), target: undefined },
      { kind: 'edge', id: '2-x', field: 'target', message: 'target null is not the id of a node of this workflow' },
    ],
    [
      'without a label',
      edge('1-3', '1', '3', { label: undefined }),
      { kind: 'edge', id: '1-3', field: 'data.label', message: 'Label is required' },
    ],
    [
      'with an empty condition',
      edge('1-3', '1', '3', { condition: '' }),
      { kind: 'edge', id: '1-3', field: 'data.condition' },
    ],
    [
      'without data',
      { id: '1-3', source: '1', target: '3' },
      { kind: 'edge', id: '1-3', field: 'data.condition', message: 'Condition is required' },
    ],
    [
      'with data that is not an object',
      { ...edge('1-3', '1', '3'), data: 'go' },
      { kind: 'edge', id: '1-3', field: 'data', message: 'data must be an object' },
    ],
    [
      'with an unknown speech type',
      edge('1-3', '1', '3', { transition_speech_type: 'video' }),
      { kind: 'edge', id: '1-3', field: 'data.transition_speech_type' },
    ],
    [
      'with speech that is not text',
      edge('1-3', '1', '3', { transition_speech: ['hi'] }),
      { kind: 'edge', id: '1-3', field: 'data.transition_speech' },
    ],
  ])('an edge %s is an error', (_, extra, expected) => {
    const input = valid()
    input.edges.push(extra)
    expectError(input, expected as Partial<DefinitionError>)
  })

  test('two transitions out of one node may not share a name; out of different nodes they may', () => {
    const input = valid()
    input.edges.push(edge('1-3', '1', '3', { label: 'To-2' }))
    expect(errorsOf(input)).toEqual([
      {
        kind: 'edge',
        id: '1-3',
        field: 'data.label',
        message: "Another transition out of node '1' already has the name 'to_2'",
      },
    ])
    const fromOthers = valid()
    fromOthers.edges[1].data.label = fromOthers.edges[0].data.label
    expect(errorsOf(fromOthers)).toEqual([])
  })

  test.each([
    ['into the Start Call node', edge('2-1', '2', '1'), '1', 'Start Call node cannot have incoming edges'],
    ['out of an End Call node', edge('3-2', '3', '2'), '3', 'End Call node cannot have outgoing edges'],
  ])('no edge %s', (_, extra, id, message) => {
    const input = valid()
    input.edges.push(extra)
    expect(errorsOf(input)).toEqual([{ kind: 'node', id, field: null, message }])
  })

  test('an End Call node must be reachable', () => {
    expect(errorsOf(withNodes(end('4')))).toEqual([
      { kind: 'node', id: '4', field: null, message: 'End Call node needs at least 1 incoming edge' },
    ])
  })

  test.each(['globalNode', 'qa', 'webhook'])('a %s node takes no edges', (type) => {
    const input = withNodes(node('4', type))
    input.edges.push(edge('2-4', '2', '4'), edge('4-3', '4', '3'))
    expect(errorsOf(input).map((error) => [error.id, error.message.split(' cannot ')[1]])).toEqual([
      ['4', 'have incoming edges'],
      ['4', 'have outgoing edges'],
    ])
  })

  test('a trigger node takes no incoming edge', () => {
    const input = withNodes(node('4', 'trigger'))
    input.edges.push(edge('2-4', '2', '4'))
    expect(errorsOf(input)).toEqual([
      { kind: 'node', id: '4', field: null, message: 'API Trigger node cannot have incoming edges' },
    ])
  })
})

describe('validateDefinition: trigger paths', () => {
  test.each([
    ['missing', {}],
    ['empty', { trigger_path: '' }],
    ['null', { trigger_path: null }],
  ])('a %s trigger path is minted as a UUID, without touching the input', (_, data) => {
    const input = withNodes(node('4', 'trigger', { name: 'CRM', ...data }))
    const before = structuredClone(input)
    const result = validateDefinition(input)
    expect(result.errors).toEqual([])
    const minted = result.definition.nodes[3].data.trigger_path as string
    expect(minted).toMatch(UUID)
    expect(result.triggerPaths).toEqual([minted])
    expect(input).toEqual(before)
  })

  test('each trigger without a path gets its own; given paths are kept, in node order', () => {
    const result = validateDefinition(
      withNodes(node('4', 'trigger'), node('5', 'trigger', { trigger_path: 'crm_leads-1' }), node('6', 'trigger')),
    )
    expect(result.errors).toEqual([])
    const [first, given, last] = result.triggerPaths
    expect(given).toBe('crm_leads-1')
    expect(first).toMatch(UUID)
    expect(last).toMatch(UUID)
    expect(first).not.toBe(last)
  })

  test('36 characters is the longest path', () => {
    const longest = 'a'.repeat(36)
    expect(validateDefinition(withNodes(node('4', 'trigger', { trigger_path: longest }))).triggerPaths).toEqual([
      longest,
    ])
    expect(errorsOf(withNodes(node('4', 'trigger', { trigger_path: `${longest}b` })))).toEqual([
      { kind: 'node', id: '4', field: 'data.trigger_path', message: 'Trigger path must be at most 36 characters long' },
    ])
  })

  test.each(['a/b', 'with space', 'ü', ' ', 'a.b'])('%p is not a trigger path', (path) => {
    expect(errorsOf(withNodes(node('4', 'trigger', { trigger_path: path })))).toEqual([
      { kind: 'node', id: '4', field: 'data.trigger_path', message: 'Trigger path must match ^[A-Za-z0-9_-]+$' },
    ])
  })

  test('a trigger path must be a string', () => {
    expectError(withNodes(node('4', 'trigger', { trigger_path: 12 })), {
      id: '4',
      field: 'data.trigger_path',
      message: 'Trigger path must be a string',
    })
  })

  test('a trigger path is unique within the workflow', () => {
    const result = validateDefinition(
      withNodes(node('4', 'trigger', { trigger_path: 'same' }), node('5', 'trigger', { trigger_path: 'same' })),
    )
    expect(result.errors).toEqual([
      {
        kind: 'node',
        id: '5',
        field: 'data.trigger_path',
        message: "Trigger path 'same' is used by another trigger node of this workflow",
      },
    ])
    expect(result.triggerPaths).toEqual(['same'])
  })
})

describe('findTriggerNodes', () => {
  const { definition } = validateDefinition(
    withNodes(
      node('4', 'trigger', { trigger_path: 'crm' }),
      node('5', 'trigger', { trigger_path: 'old', enabled: false }),
    ),
  )

  test('find the trigger nodes in node order', () => {
    expect(findTriggerNodes(definition).map((n) => n.id)).toEqual(['4', '5'])
    expect(findTriggerNodes(validateDefinition(valid()).definition)).toEqual([])
  })
})
