// Starting points for a new agent: definitions as the API takes them (test/console/agent-templates.test.ts posts each).
import type { AgentDefinition } from '../../src/definition/rules'

export type AgentTemplate = {
  key: string
  title: string
  summary: string
  definition: AgentDefinition
  /** The node whose `tool_uuids` gets the transfer tool the console creates when a transfer number is given. */
  transferNodeId?: string
}

const node = (id: string, type: string, x: number, y: number, data: Record<string, unknown>) => ({
  id,
  type,
  position: { x, y },
  data,
})

const edge = (source: string, target: string, label: string, condition: string) => ({
  id: `${source}-${target}`,
  source,
  target,
  data: { label, condition },
})

const persona = (text: string) => node('global', 'globalNode', -320, 0, { name: 'Persona', prompt: text })

export const AGENT_TEMPLATES: AgentTemplate[] = [
  {
    key: 'blank',
    title: 'Blank',
    summary: 'A start and an end, nothing else.',
    definition: {
      nodes: [
        node('start', 'startCall', 0, 0, { name: 'Start', greeting: 'Hello!', prompt: 'Help the caller.' }),
        node('end', 'endCall', 0, 220, { name: 'End', prompt: 'Say goodbye.' }),
      ],
      edges: [edge('start', 'end', 'Done', 'The caller has nothing more to ask')],
    },
  },
  {
    key: 'receptionist',
    title: 'Receptionist with transfer',
    summary: 'Greets callers, answers simple questions, transfers to a person when asked.',
    transferNodeId: 'transfer',
    definition: {
      nodes: [
        persona('You are the receptionist of {{company_name | our company}}. Be brief and warm.'),
        node('start', 'startCall', 0, 0, {
          name: 'Greeting',
          greeting: 'Hello, you have reached {{company_name | our company}}. How can I help?',
          prompt: 'Find out why the caller is calling. Answer opening-hours questions yourself.',
        }),
        node('transfer', 'agentNode', -200, 240, {
          name: 'Transfer',
          prompt: 'Tell the caller you are putting them through, then transfer the call.',
          tool_uuids: [],
        }),
        node('end', 'endCall', 200, 240, { name: 'Goodbye', prompt: 'Thank the caller and say goodbye.' }),
      ],
      edges: [
        edge('start', 'transfer', 'Wants a person', 'The caller asks for a person or a department'),
        edge('start', 'end', 'Done', 'The caller has what they needed'),
      ],
    },
  },
  {
    key: 'appointment',
    title: 'Appointment booking',
    summary: 'Collects a name, a date and a time, and keeps them as extracted values.',
    definition: {
      nodes: [
        node('start', 'startCall', 0, 0, {
          name: 'Greeting',
          greeting: 'Hello, I can book an appointment for you.',
          prompt: 'Ask for the name, the preferred day and time of the appointment.',
        }),
        node('confirm', 'agentNode', 0, 240, {
          name: 'Confirm',
          prompt: 'Repeat the name, day and time, and ask the caller to confirm.',
          extraction_enabled: true,
          extraction_prompt: 'Read the booking the caller confirmed.',
          extraction_variables: [
            { name: 'caller_name', type: 'string', prompt: 'Full name of the caller' },
            { name: 'appointment_day', type: 'string', prompt: 'Day of the appointment, as said' },
            { name: 'appointment_time', type: 'string', prompt: 'Time of the appointment, as said' },
            { name: 'confirmed', type: 'boolean', prompt: 'Whether the caller confirmed' },
          ],
        }),
        node('end', 'endCall', 0, 480, { name: 'Goodbye', prompt: 'Say the appointment is booked and say goodbye.' }),
      ],
      edges: [
        edge('start', 'confirm', 'Details given', 'The caller gave a name, a day and a time'),
        edge('confirm', 'end', 'Confirmed', 'The caller confirmed the booking'),
      ],
    },
  },
  {
    key: 'lead',
    title: 'Lead qualification',
    summary: 'Asks a few qualifying questions and scores the lead.',
    definition: {
      nodes: [
        persona('You call on behalf of {{company_name | our company}} about {{product | our product}}. Be concise.'),
        node('start', 'startCall', 0, 0, {
          name: 'Introduction',
          greeting: 'Hello {{first_name | there}}, do you have a minute?',
          prompt: 'Introduce yourself and ask whether it is a good time.',
        }),
        node('qualify', 'agentNode', 0, 240, {
          name: 'Qualify',
          prompt: 'Ask about their budget, timeline and who decides.',
          extraction_enabled: true,
          extraction_variables: [
            { name: 'budget', type: 'number', prompt: 'Budget in the caller’s currency' },
            { name: 'timeline', type: 'string', prompt: 'When they want to buy' },
            { name: 'decision_maker', type: 'boolean', prompt: 'Whether the caller decides' },
          ],
        }),
        node('end', 'endCall', 0, 480, { name: 'Wrap up', prompt: 'Thank them and say someone will follow up.' }),
      ],
      edges: [
        edge('start', 'qualify', 'Has time', 'The caller agrees to talk'),
        edge('start', 'end', 'No time', 'The caller does not want to talk now'),
        edge('qualify', 'end', 'Answered', 'The caller answered the questions'),
      ],
    },
  },
  {
    key: 'survey',
    title: 'Survey',
    summary: 'Three questions, answers kept as extracted values.',
    definition: {
      nodes: [
        node('start', 'startCall', 0, 0, {
          name: 'Introduction',
          greeting: 'Hello, may I ask you three short questions about your last visit?',
          prompt: 'Ask whether the caller agrees to the survey.',
        }),
        node('questions', 'agentNode', 0, 240, {
          name: 'Questions',
          prompt:
            'Ask one at a time: how satisfied they were from 1 to 5, what they liked, and whether they would recommend us.',
          extraction_enabled: true,
          extraction_variables: [
            { name: 'satisfaction', type: 'number', prompt: 'Score from 1 to 5' },
            { name: 'liked', type: 'string', prompt: 'What they liked' },
            { name: 'would_recommend', type: 'boolean', prompt: 'Whether they would recommend us' },
          ],
        }),
        node('end', 'endCall', 0, 480, { name: 'Thanks', prompt: 'Thank them for their time and say goodbye.' }),
      ],
      edges: [
        edge('start', 'questions', 'Agrees', 'The caller agrees to answer'),
        edge('start', 'end', 'Declines', 'The caller does not want to answer'),
        edge('questions', 'end', 'Answered', 'All three questions are answered'),
      ],
    },
  },
]

/** What the console sends to create the receptionist's transfer tool (POST /api/v1/tools/). */
export const transferToolBody = (destination: string) => ({
  name: 'Transfer to a person',
  description: 'Puts the caller through to a person.',
  definition: { schema_version: 1, type: 'transfer_call', config: { destination } },
})

/** A copy of the template's definition, its transfer node given the tool when there is one. */
export function templateDefinition(template: AgentTemplate, transferToolUuid?: string): AgentDefinition {
  const definition: AgentDefinition = JSON.parse(JSON.stringify(template.definition))
  const transfer = definition.nodes.find((item) => item.id === template.transferNodeId)
  if (transfer && transferToolUuid) transfer.data.tool_uuids = [transferToolUuid]
  return definition
}
