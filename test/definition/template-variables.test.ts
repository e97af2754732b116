import { describe, expect, test } from 'bun:test'
import type { AgentDefinition, AgentNode } from '../../src/definition/definition'
import {
  renderTemplate,
  requiredTemplateVariables,
  templateContextVariables,
} from '../../src/definition/template-variables'

const node = (id: string, type: string, data: Record<string, unknown>): AgentNode => ({
  id,
  type,
  position: { x: 0, y: 0 },
  data,
})

/** A definition whose start prompt is `prompt`, plus whatever other nodes and edges a test needs. */
const definitionWith = (prompt: string, extra: Partial<AgentDefinition> = {}): AgentDefinition => ({
  nodes: [node('1', 'startCall', { prompt }), ...(extra.nodes ?? [])],
  edges: extra.edges ?? [],
})

const required = (prompt: string) => requiredTemplateVariables(definitionWith(prompt))

describe('requiredTemplateVariables', () => {
  test('collects the Start greeting and prompt, Agent, End and Global prompts and transition speech', () => {
    const definition: AgentDefinition = {
      nodes: [
        node('1', 'startCall', { prompt: 'Call {{first_name}}.', greeting: 'Hello {{title}} {{last_name}}' }),
        node('2', 'agentNode', { prompt: 'Ask about {{product}}.' }),
        node('3', 'endCall', { prompt: 'Thank {{first_name}}.' }),
        node('4', 'globalNode', { prompt: 'You work for {{company}}.' }),
      ],
      edges: [
        {
          id: '1-2',
          source: '1',
          target: '2',
          data: { label: 'a', condition: 'b', transition_speech: 'One moment, {{title}}.' },
        },
        {
          id: '2-3',
          source: '2',
          target: '3',
          data: { label: 'a', condition: 'b', transition_speech: 'Thanks {{ agent_name }}' },
        },
      ],
    }
    expect(requiredTemplateVariables(definition)).toEqual([
      'agent_name',
      'company',
      'first_name',
      'last_name',
      'product',
      'title',
    ])
  })

  test('ignores every other field and node type', () => {
    const definition = definitionWith('Plain prompt.', {
      nodes: [
        node('2', 'agentNode', {
          prompt: 'x',
          greeting: '{{not_a_greeting_here}}',
          extraction_prompt: '{{extraction}}',
        }),
        node('3', 'webhook', { payload_template: { id: '{{run_id}}' }, endpoint_url: 'https://x/{{path}}' }),
        node('4', 'qa', { qa_system_prompt: '{{transcript}}' }),
        node('5', 'trigger', { name: '{{trigger_name}}' }),
      ],
    })
    definition.nodes[0].data.extraction_prompt = '{{start_extraction}}'
    expect(requiredTemplateVariables(definition)).toEqual([])
  })

  test('a variable with a default, in either syntax, is optional', () => {
    expect(required('{{a | there}} {{ b | fallback:friend }} {{c|fallback}} {{d | }} {{e}}')).toEqual(['e'])
  })

  test('nested paths, clock variables and system variables are never required', () => {
    expect(
      required(
        '{{customer.name}} {{initial_context.city}} {{current_time}} {{current_time_Europe/Paris}} {{current_weekday}} ' +
          '{{current_weekday_America/New_York}} {{campaign_id}} {{provider}} {{source_uuid}} {{phone}}',
      ),
    ).toEqual(['phone'])
  })

  test('a current_time_ suffix that is not a time zone is an ordinary variable', () => {
    expect(required('{{current_time_slot}} {{current_weekday_of_visit}}')).toEqual([
      'current_time_slot',
      'current_weekday_of_visit',
    ])
  })

  test('names are lowercased, unique and sorted, so CSV headers (lowercased) match whatever the case', () => {
    expect(required('{{Zip}} {{FirstName}} {{firstname}} {{  FIRSTNAME  }} {{a_1}}')).toEqual([
      'a_1',
      'firstname',
      'zip',
    ])
  })

  test('text that only looks like a placeholder is ignored', () => {
    expect(required('{{ first name }} {single} {{}} {{ }}')).toEqual([])
  })

  test('a definition without template texts requires nothing', () => {
    expect(requiredTemplateVariables({ nodes: [node('1', 'startCall', {})], edges: [] })).toEqual([])
  })
})

describe('templateContextVariables', () => {
  test('maps every context variable to its default, or "" when it has none', () => {
    const definition = definitionWith(
      '{{First_Name}} {{city | Paris}} {{ title | fallback:Dr }} {{nick | fallback}} {{age}}',
    )
    expect(templateContextVariables(definition)).toEqual({
      age: '',
      city: 'Paris',
      first_name: '',
      nick: 'Nick',
      title: 'Dr',
    })
    expect(Object.keys(templateContextVariables(definition))).toEqual(['age', 'city', 'first_name', 'nick', 'title'])
  })

  test('the first default given for a variable wins', () => {
    expect(templateContextVariables(definitionWith('{{city}} {{city | Rome}} {{City | Oslo}}'))).toEqual({
      city: 'Rome',
    })
  })

  test('leaves out nested paths, clock variables and system variables', () => {
    expect(
      templateContextVariables(definitionWith('{{a.b}} {{current_time}} {{provider}} {{source_uuid | x}}')),
    ).toEqual({})
  })
})

describe('renderTemplate', () => {
  const now = new Date('2025-01-31T14:05:09Z') // a Friday

  test.each([
    ['fills a variable', 'Hi {{name}}!', { name: 'Ann' }, 'Hi Ann!'],
    ['allows spaces inside the braces', 'Hi {{   name   }}!', { name: 'Ann' }, 'Hi Ann!'],
    ['writes numbers and booleans as text', '{{n}} {{zero}} {{no}}', { n: 1.5, zero: 0, no: false }, '1.5 0 false'],
    ['writes a missing variable as nothing', 'Hi {{name}}!', {}, 'Hi !'],
    ['uses the default for a missing value', 'Hi {{name | there}}!', {}, 'Hi there!'],
    ['uses the default for null', 'Hi {{name | there}}!', { name: null }, 'Hi there!'],
    ['uses the default for an empty string', 'Hi {{name | there}}!', { name: '' }, 'Hi there!'],
    ['writes null without a default as nothing', 'Hi {{name}}!', { name: null }, 'Hi !'],
    ['keeps a default with spaces', '{{name | dear customer}}', {}, 'dear customer'],
    ['keeps a colon inside a default', 'At {{time | 10:30}}', {}, 'At 10:30'],
    ['understands the legacy fallback filter', 'Hi {{ name | fallback:friend }}', {}, 'Hi friend'],
    ['title-cases the path for a fallback without value', '{{ first_name | fallback }}', {}, 'First_Name'],
    ['does not use the default when there is a value', '{{ name | fallback:friend }}', { name: 'Bo' }, 'Bo'],
    ['resolves dotted paths', '{{customer.address.city}}', { customer: { address: { city: 'Lyon' } } }, 'Lyon'],
    ['resolves array indexes', '{{items.1}}', { items: ['a', 'b'] }, 'b'],
    ['writes a missing nested value as its default', '{{customer.age | unknown}}', { customer: {} }, 'unknown'],
    ['does not walk into text', '{{name.length}}', { name: 'Ann' }, ''],
    ['tolerates the initial_context. prefix', '{{initial_context.name}}', { name: 'Ann' }, 'Ann'],
    [
      'prefers a real initial_context key',
      '{{initial_context.name}}',
      { name: 'Ann', initial_context: { name: 'Bo' } },
      'Bo',
    ],
    ['writes objects and arrays as JSON', '{{o}} {{l}}', { o: { a: 1 }, l: [1, 'x'] }, '{"a":1} [1,"x"]'],
    [
      'matches keys ignoring case, exact key first',
      '{{FirstName}} {{city}}',
      { firstname: 'Ann', city: 'x', City: 'y' },
      'Ann x',
    ],
    [
      'leaves text that is not a placeholder alone',
      '{{ first name }} {x} {{}}',
      { first: 'no' },
      '{{ first name }} {x} {{}}',
    ],
  ])('%s', (_, template, context, expected) => {
    expect(renderTemplate(template, context as Record<string, unknown>, now)).toBe(expected)
  })

  test('clock variables come from `now`, in UTC or in the named zone', () => {
    expect(renderTemplate('{{current_time}} / {{current_weekday}}', {}, now)).toBe('2025-01-31 14:05 UTC / Friday')
    expect(renderTemplate('{{current_time_Asia/Tokyo}} / {{current_weekday_Asia/Tokyo}}', {}, now)).toBe(
      '2025-01-31 23:05 Asia/Tokyo / Friday',
    )
    expect(renderTemplate('{{current_time_America/Los_Angeles}}', {}, now)).toBe('2025-01-31 06:05 America/Los_Angeles')
    expect(renderTemplate('{{current_weekday_Pacific/Kiritimati}}', {}, now)).toBe('Saturday')
  })

  test('a clock variable with an unknown zone is an ordinary missing variable', () => {
    expect(renderTemplate('[{{current_time_Mars/Olympus}}] [{{current_time_x | soon}}]', {}, now)).toBe('[] [soon]')
  })

  test('a value in the context wins over the clock', () => {
    expect(renderTemplate('{{current_time}}', { current_time: 'tea time' }, now)).toBe('tea time')
  })

  test('uses the current time when no `now` is given', () => {
    expect(renderTemplate('{{current_time}}', {})).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/)
  })
})
