import { describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
// Registers the UnionEnum kind the catalog's enums use (the HTTP layer checks them); without it Value.Check throws.
import 'elysia'
import { validateDefinition, type AgentNode } from '../../src/definition/definition'
import {
  getNodeType,
  listNodeTypes,
  NodeSpecSchema,
  NodeTypesResponseSchema,
  SPEC_VERSION,
  type PropertySpec,
  type RowPropertySpec,
} from '../../src/definition/node-catalog'

// The properties published client SDKs build and validate (shared/reference/node-types.md): the TypeScript type they
// generate for each property, and whether it is required. Rows of fixed collections are nested tables.
type Expected = Record<string, [type: string | Expected, required: boolean]>

const EXTRACTION_ROW: Expected = {
  name: ['string', true],
  type: ['"string"|"number"|"boolean"', true],
  prompt: ['string', false],
}
const EXTRACTION: Expected = {
  extraction_enabled: ['boolean', false],
  extraction_prompt: ['string', false],
  extraction_variables: [EXTRACTION_ROW, false],
}

const EXPECTED: Record<string, Expected> = {
  startCall: {
    name: ['string', false],
    greeting_type: ['"text"|"audio"', false],
    greeting: ['string', false],
    greeting_recording_id: ['string', false],
    prompt: ['string', true],
    allow_interrupt: ['boolean', false],
    add_global_prompt: ['boolean', false],
    delayed_start: ['boolean', false],
    delayed_start_duration: ['number', false],
    ...EXTRACTION,
    tool_uuids: ['string[]', false],
    document_uuids: ['string[]', false],
    pre_call_fetch_enabled: ['boolean', false],
    pre_call_fetch_url: ['string', false],
    pre_call_fetch_credential_uuid: ['string', false],
  },
  agentNode: {
    name: ['string', false],
    prompt: ['string', true],
    allow_interrupt: ['boolean', false],
    add_global_prompt: ['boolean', false],
    ...EXTRACTION,
    tool_uuids: ['string[]', false],
    document_uuids: ['string[]', false],
  },
  endCall: {
    name: ['string', false],
    prompt: ['string', true],
    add_global_prompt: ['boolean', false],
    ...EXTRACTION,
  },
  globalNode: { name: ['string', false], prompt: ['string', false] },
  qa: {
    name: ['string', false],
    qa_enabled: ['boolean', false],
    qa_system_prompt: ['string', false],
    qa_min_call_duration: ['number', false],
    qa_voicemail_calls: ['boolean', false],
    qa_sample_rate: ['number', false],
    qa_use_workflow_llm: ['boolean', false],
    qa_provider: ['"openai"|"azure"|"openrouter"|"anthropic"', false],
    qa_model: ['string', false],
    qa_api_key: ['string', false],
    qa_endpoint: ['string', false],
  },
  trigger: { name: ['string', false], enabled: ['boolean', false], trigger_path: ['string', false] },
  tuner: {
    name: ['string', false],
    tuner_enabled: ['boolean', false],
    tuner_agent_id: ['string', true],
    tuner_workspace_id: ['number', true],
    tuner_api_key: ['string', true],
  },
  webhook: {
    name: ['string', false],
    enabled: ['boolean', false],
    http_method: ['"GET"|"POST"|"PUT"|"PATCH"|"DELETE"', false],
    endpoint_url: ['string', false],
    credential_uuid: ['string', false],
    custom_headers: [{ key: ['string', true], value: ['string', true] }, false],
    payload_template: ['Record<string, unknown>', false],
  },
}

/** The TypeScript type an SDK generates for a property type. */
function sdkType(spec: PropertySpec | RowPropertySpec): string {
  switch (spec.type) {
    case 'string':
    case 'mention_textarea':
    case 'url':
    case 'recording_ref':
    case 'credential_ref':
      return 'string'
    case 'number':
    case 'boolean':
      return spec.type
    case 'tool_refs':
    case 'document_refs':
      return 'string[]'
    case 'json':
      return 'Record<string, unknown>'
    case 'options':
      return (spec.options ?? []).map((option) => JSON.stringify(option.value)).join('|')
    default:
      return `unexpected ${spec.type}`
  }
}

function expectProperties(properties: (PropertySpec | RowPropertySpec)[], expected: Expected, where: string) {
  for (const [name, [type, required]] of Object.entries(expected)) {
    const spec = properties.find((property) => property.name === name)
    expect(spec, `${where}.${name}`).toBeDefined()
    expect({ name, required: spec!.required ?? false }).toEqual({ name, required })
    if (typeof type === 'string') {
      expect({ name, type: sdkType(spec!) }).toEqual({ name, type })
    } else {
      expect({ name, type: spec!.type }).toEqual({ name, type: 'fixed_collection' })
      expectProperties('properties' in spec! ? (spec.properties ?? []) : [], type, `${where}.${name}`)
    }
  }
}

describe('node catalog', () => {
  test('lists exactly the node types clients know', () => {
    expect(
      listNodeTypes()
        .map((spec) => spec.name)
        .sort(),
    ).toEqual(Object.keys(EXPECTED).sort())
  })

  for (const [name, expected] of Object.entries(EXPECTED)) {
    test(`${name} declares every client-known property with its type and required flag`, () => {
      expectProperties(getNodeType(name)!.properties, expected, name)
    })
  }

  test('every entry has the NodeSpec / PropertySpec shape of the API', () => {
    expect(Value.Check(NodeTypesResponseSchema, { spec_version: SPEC_VERSION, node_types: listNodeTypes() })).toBe(true)
    for (const spec of listNodeTypes()) expect(Value.Check(NodeSpecSchema, spec)).toBe(true)
  })

  test('the schemas reject what the API must never send', () => {
    const [first] = listNodeTypes()
    const withUnknownPropertyType = { ...first, properties: [{ ...first.properties[0], type: 'text' }] }
    const withoutDescription = { ...first, properties: [{ ...first.properties[0], description: '' }] }
    const withExtraKey = { ...first, colour: 'red' }
    for (const bad of [withUnknownPropertyType, withoutDescription, withExtraKey]) {
      expect(Value.Check(NodeSpecSchema, bad)).toBe(false)
    }
  })

  test('property names are unique per node type and per row', () => {
    for (const spec of listNodeTypes()) {
      const names = spec.properties.map((property) => property.name)
      expect(new Set(names).size).toBe(names.length)
      for (const property of spec.properties) {
        const rowNames = (property.properties ?? []).map((row) => row.name)
        expect(new Set(rowNames).size).toBe(rowNames.length)
      }
    }
  })

  test('enumerations carry options, collections carry row properties, nothing else does', () => {
    for (const spec of listNodeTypes()) {
      for (const property of spec.properties) {
        const where = `${spec.name}.${property.name}`
        expect({ where, hasOptions: (property.options?.length ?? 0) > 0 }).toEqual({
          where,
          hasOptions: property.type === 'options' || property.type === 'multi_options',
        })
        expect({ where, hasRows: (property.properties?.length ?? 0) > 0 }).toEqual({
          where,
          hasRows: property.type === 'fixed_collection',
        })
      }
    }
  })

  test('extraction variable types, greeting types, HTTP methods and QA providers are options', () => {
    const optionValues = (node: string, property: string) =>
      getNodeType(node)!
        .properties.find((spec) => spec.name === property)!
        .options!.map((option) => option.value)
    expect(optionValues('startCall', 'greeting_type')).toEqual(['text', 'audio'])
    expect(optionValues('webhook', 'http_method')).toEqual(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])
    expect(optionValues('qa', 'qa_provider')).toEqual(['openai', 'azure', 'openrouter', 'anthropic'])
    const extractionType = getNodeType('agentNode')!
      .properties.find((spec) => spec.name === 'extraction_variables')!
      .properties!.find((row) => row.name === 'type')!
    expect(extractionType.options!.map((option) => option.value)).toEqual(['string', 'number', 'boolean'])
  })

  test('trigger paths are limited to 36 URL-safe characters', () => {
    const triggerPath = getNodeType('trigger')!.properties.find((spec) => spec.name === 'trigger_path')!
    expect({ max_length: triggerPath.max_length, pattern: triggerPath.pattern }).toEqual({
      max_length: 36,
      pattern: '^[A-Za-z0-9_-]+$',
    })
  })

  test('instance limits: one Start Call, at most one Global, QA and Tuner node', () => {
    const limits = Object.fromEntries(
      listNodeTypes().map((spec) => [spec.name, spec.graph_constraints?.max_instances ?? null]),
    )
    expect(limits).toEqual({
      startCall: 1,
      agentNode: null,
      endCall: null,
      globalNode: 1,
      trigger: null,
      webhook: null,
      qa: 1,
      tuner: 1,
    })
    expect(getNodeType('startCall')!.graph_constraints!.min_instances).toBe(1)
  })

  test('each example, with the defaults a client fills in, is a valid node', () => {
    for (const spec of listNodeTypes()) {
      const defaults = Object.fromEntries(
        spec.properties.filter((p) => p.default !== undefined).map((p) => [p.name, p.default]),
      )
      expect(spec.examples?.length ?? 0).toBeGreaterThan(0)
      for (const example of spec.examples ?? []) {
        const node: AgentNode = {
          id: '2',
          type: spec.name,
          position: { x: 0, y: 0 },
          data: { ...defaults, ...example.data },
        }
        const start: AgentNode = { id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { prompt: 'Hello' } }
        const callStep = spec.name === 'agentNode' || spec.name === 'endCall'
        const definition =
          spec.name === 'startCall'
            ? { nodes: [{ ...node, id: '1' }], edges: [] }
            : {
                nodes: [start, node],
                edges: callStep
                  ? [{ id: '1-2', source: '1', target: '2', data: { label: 'next', condition: 'when done' } }]
                  : [],
              }
        expect({ example: example.name, errors: validateDefinition(definition).errors }).toEqual({
          example: example.name,
          errors: [],
        })
      }
    }
  })

  test('getNodeType answers undefined for a name that is not a node type', () => {
    expect(getNodeType('startcall')).toBeUndefined()
    expect(getNodeType('constructor')).toBeUndefined()
  })
})
