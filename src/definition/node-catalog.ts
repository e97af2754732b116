import { Kind, Type, Type as t, type Static, type TSchema } from '@sinclair/typebox'

/**
 * The workflow node catalog served at `GET /api/v1/node-types`. Client SDKs build and validate node `data` against it
 * (they reject unknown fields, missing required ones, wrong scalar types and values outside `options`), and
 * `validateDefinition` checks definitions against the same entries, so this file is the one place a node field is declared.
 */

/** Clients pin to this and warn when the server reports a newer one: bump it when the catalog changes shape. */
export const SPEC_VERSION = '1.0.0'

/** A string enum described as `{type: 'string', enum}`, of the UnionEnum kind that the HTTP layer knows how to check. */
const stringEnum = <const T extends readonly string[]>(values: T) =>
  t.Unsafe<T[number]>({ [Kind]: 'UnionEnum', type: 'string', enum: values })

export const PropertyTypeSchema = stringEnum([
  'string',
  'number',
  'boolean',
  'options',
  'multi_options',
  'fixed_collection',
  'json',
  'tool_refs',
  'document_refs',
  'recording_ref',
  'credential_ref',
  'mention_textarea',
  'url',
])

export const NodeCategorySchema = stringEnum(['call_node', 'global_node', 'trigger', 'integration'])

const nullable = <T extends TSchema>(schema: T) => t.Optional(t.Union([schema, t.Null()]))

export const PropertyOptionSchema = t.Object(
  {
    value: t.Union([t.String(), t.Number(), t.Boolean()]),
    label: t.String(),
    description: nullable(t.String()),
  },
  { additionalProperties: false },
)

export const DisplayOptionsSchema = t.Object(
  {
    show: nullable(t.Record(t.String(), t.Array(t.Unknown()))),
    hide: nullable(t.Record(t.String(), t.Array(t.Unknown()))),
  },
  { additionalProperties: false },
)

export const PropertyRendererOptionsSchema = t.Object(
  {
    layout: nullable(
      t.Object({ column_span: nullable(Type.Integer({ minimum: 1, maximum: 12 })) }, { additionalProperties: false }),
    ),
    number_input: nullable(
      t.Object({ fractional: t.Optional(t.Boolean({ default: false })) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
)

const propertySpecFields = {
  name: t.String(),
  type: PropertyTypeSchema,
  display_name: t.String(),
  description: t.String({ minLength: 1 }),
  llm_hint: nullable(t.String()),
  default: t.Optional(t.Unknown()),
  required: t.Optional(t.Boolean({ default: false })),
  placeholder: nullable(t.String()),
  display_options: nullable(DisplayOptionsSchema),
  options: nullable(t.Array(PropertyOptionSchema)),
  min_value: nullable(t.Number()),
  max_value: nullable(t.Number()),
  min_length: nullable(Type.Integer()),
  max_length: nullable(Type.Integer()),
  pattern: nullable(t.String()),
  editor: nullable(t.String()),
  renderer_options: nullable(PropertyRendererOptionsSchema),
}

/** A field of a `fixed_collection` row. The reference declares PropertySpec recursively; rows never nest, and a plain
 * two-level schema keeps the OpenAPI document free of self-references. */
export const RowPropertySpecSchema = t.Object(propertySpecFields, { additionalProperties: false })

export const PropertySpecSchema = t.Object(
  { ...propertySpecFields, properties: nullable(t.Array(RowPropertySpecSchema)) },
  { additionalProperties: false },
)

export const GraphConstraintsSchema = t.Object(
  {
    min_incoming: nullable(Type.Integer()),
    max_incoming: nullable(Type.Integer()),
    min_outgoing: nullable(Type.Integer()),
    max_outgoing: nullable(Type.Integer()),
    min_instances: nullable(Type.Integer()),
    max_instances: nullable(Type.Integer()),
  },
  { additionalProperties: false },
)

export const NodeExampleSchema = t.Object(
  { name: t.String(), description: nullable(t.String()), data: t.Record(t.String(), t.Unknown()) },
  { additionalProperties: false },
)

export const NodeSpecSchema = t.Object(
  {
    name: t.String(),
    display_name: t.String(),
    description: t.String({ minLength: 1 }),
    llm_hint: nullable(t.String()),
    docs_url: nullable(t.String()),
    category: NodeCategorySchema,
    icon: t.String(),
    version: t.Optional(t.String({ default: '1.0.0' })),
    properties: t.Array(PropertySpecSchema),
    examples: t.Optional(t.Array(NodeExampleSchema)),
    graph_constraints: nullable(GraphConstraintsSchema),
  },
  { additionalProperties: false },
)

export const NodeTypesResponseSchema = t.Object({
  spec_version: t.String(),
  node_types: t.Array(NodeSpecSchema),
})

export type RowPropertySpec = Static<typeof RowPropertySpecSchema>
export type PropertySpec = Static<typeof PropertySpecSchema>
export type GraphConstraints = Static<typeof GraphConstraintsSchema>
export type NodeSpec = Static<typeof NodeSpecSchema>
export type NodeTypesResponse = Static<typeof NodeTypesResponseSchema>

// ---- properties shared by several node types ----

const nameProperty: PropertySpec = {
  name: 'name',
  type: 'string',
  display_name: 'Name',
  description: 'Label shown on the canvas and in call logs. No effect on the call.',
}

const promptProperty = (description: string): PropertySpec => ({
  name: 'prompt',
  type: 'mention_textarea',
  display_name: 'Prompt',
  description,
  llm_hint:
    'Supports {{variable}} placeholders filled from the call context; {{variable | default}} makes one optional.',
  required: true,
  min_length: 1,
})

const allowInterruptProperty: PropertySpec = {
  name: 'allow_interrupt',
  type: 'boolean',
  display_name: 'Allow interruption',
  description: 'Let the caller talk over the agent; the agent stops speaking when interrupted.',
  default: true,
}

const addGlobalPromptProperty: PropertySpec = {
  name: 'add_global_prompt',
  type: 'boolean',
  display_name: 'Add global prompt',
  description: "Prepend the Global node's prompt to this node's prompt.",
  default: true,
}

const showWhenExtractionEnabled = { show: { extraction_enabled: [true] } }

const extractionProperties: PropertySpec[] = [
  {
    name: 'extraction_enabled',
    type: 'boolean',
    display_name: 'Extract variables',
    description: 'Capture values from the conversation when the call leaves this node.',
    default: false,
  },
  {
    name: 'extraction_prompt',
    type: 'string',
    display_name: 'Extraction instructions',
    description: 'General guidance for how the values should be read from the conversation.',
    display_options: showWhenExtractionEnabled,
    editor: 'textarea',
  },
  {
    name: 'extraction_variables',
    type: 'fixed_collection',
    display_name: 'Variables to extract',
    description: 'One row per value to capture: its name, its type and a hint on what to look for.',
    display_options: showWhenExtractionEnabled,
    properties: [
      {
        name: 'name',
        type: 'string',
        display_name: 'Variable name',
        description: 'snake_case key the value is stored under.',
        required: true,
        min_length: 1,
      },
      {
        name: 'type',
        type: 'options',
        display_name: 'Type',
        description: 'Type of the captured value.',
        required: true,
        options: [
          { value: 'string', label: 'Text' },
          { value: 'number', label: 'Number' },
          { value: 'boolean', label: 'Yes / no' },
        ],
      },
      {
        name: 'prompt',
        type: 'string',
        display_name: 'Hint',
        description: 'What to look for in the conversation for this value.',
        editor: 'textarea',
      },
    ],
  },
]

const knowledgeProperties: PropertySpec[] = [
  {
    name: 'tool_uuids',
    type: 'tool_refs',
    display_name: 'Tools',
    description: 'Tools the agent may call while in this node.',
    llm_hint: 'Array of tool UUIDs of this organization.',
  },
  {
    name: 'mcp_tool_filters',
    type: 'json',
    display_name: 'MCP tools offered',
    description:
      "Which of an MCP tool's server tools this node offers, per tool: absent offers all of them; an object offers " +
      'only the names it lists, and none of a tool it leaves out.',
    llm_hint:
      "Object mapping an MCP tool's UUID (one of tool_uuids) to an array of names from its discovered_tools, " +
      'e.g. {"<tool_uuid>": ["search_orders"]}.',
  },
  {
    name: 'document_uuids',
    type: 'document_refs',
    display_name: 'Documents',
    description: 'Knowledge-base documents the agent may consult while in this node.',
    llm_hint: 'Array of document UUIDs of this organization.',
  },
]

const enabledProperty = (description: string): PropertySpec => ({
  name: 'enabled',
  type: 'boolean',
  display_name: 'Enabled',
  description,
  default: true,
})

const NODE_SPECS: NodeSpec[] = [
  {
    name: 'startCall',
    display_name: 'Start Call',
    description: 'Where every call begins: an optional greeting, then the first conversation step.',
    category: 'call_node',
    icon: 'Play',
    version: '1.0.0',
    properties: [
      nameProperty,
      {
        name: 'greeting_type',
        type: 'options',
        display_name: 'Greeting type',
        description: 'Speak the greeting from text or play a recording.',
        default: 'text',
        options: [
          { value: 'text', label: 'Text' },
          { value: 'audio', label: 'Recording' },
        ],
      },
      {
        name: 'greeting',
        type: 'string',
        display_name: 'Greeting',
        description: 'First words of the call, spoken as soon as it connects. Leave empty for no greeting.',
        llm_hint: 'Supports {{variable}} placeholders.',
        display_options: { show: { greeting_type: ['text'] } },
        editor: 'textarea',
      },
      {
        name: 'greeting_recording_id',
        type: 'recording_ref',
        display_name: 'Greeting recording',
        description: 'Recording played as the greeting.',
        display_options: { show: { greeting_type: ['audio'] } },
      },
      promptProperty('Instructions for the agent during the opening of the call.'),
      allowInterruptProperty,
      addGlobalPromptProperty,
      {
        name: 'delayed_start',
        type: 'boolean',
        display_name: 'Delayed start',
        description: 'Wait a moment after the call is answered before the agent speaks.',
        default: false,
      },
      {
        name: 'delayed_start_duration',
        type: 'number',
        display_name: 'Delay (seconds)',
        description: 'How long to wait before speaking, in seconds.',
        default: 2,
        min_value: 0.1,
        max_value: 10,
        display_options: { show: { delayed_start: [true] } },
        renderer_options: { number_input: { fractional: true } },
      },
      ...extractionProperties,
      ...knowledgeProperties,
      {
        name: 'pre_call_fetch_enabled',
        type: 'boolean',
        display_name: 'Fetch data before the call',
        description:
          'Ask an HTTP endpoint for extra context before the call starts; its JSON answer becomes template variables.',
        default: false,
      },
      {
        name: 'pre_call_fetch_url',
        type: 'url',
        display_name: 'Fetch URL',
        description: 'Endpoint asked for the extra context.',
        display_options: { show: { pre_call_fetch_enabled: [true] } },
        placeholder: 'https://example.com/lookup',
      },
      {
        name: 'pre_call_fetch_credential_uuid',
        type: 'credential_ref',
        display_name: 'Fetch credential',
        description: 'Credential sent with the fetch request, if the endpoint needs one.',
        display_options: { show: { pre_call_fetch_enabled: [true] } },
      },
    ],
    examples: [
      {
        name: 'appointment_reminder',
        data: {
          name: 'Greeting',
          greeting_type: 'text',
          greeting: 'Hello {{first_name}}, this is a reminder about your appointment.',
          prompt: 'Confirm that the caller can attend the appointment on {{appointment_date}}.',
        },
      },
    ],
    graph_constraints: { min_instances: 1, max_instances: 1, max_incoming: 0 },
  },
  {
    name: 'agentNode',
    display_name: 'Agent',
    description: 'One step of the conversation with its own instructions, tools and documents.',
    category: 'call_node',
    icon: 'MessageSquare',
    version: '1.0.0',
    properties: [
      nameProperty,
      promptProperty('Instructions for the agent during this step of the call.'),
      allowInterruptProperty,
      addGlobalPromptProperty,
      ...extractionProperties,
      ...knowledgeProperties,
    ],
    examples: [
      {
        name: 'collect_details',
        data: { name: 'Collect details', prompt: "Ask for the caller's full name and the reason for the call." },
      },
    ],
  },
  {
    name: 'endCall',
    display_name: 'End Call',
    description: 'Closes the conversation and hangs up, optionally capturing values first.',
    category: 'call_node',
    icon: 'PhoneOff',
    version: '1.0.0',
    properties: [
      nameProperty,
      promptProperty('Instructions for the agent while wrapping up the call.'),
      addGlobalPromptProperty,
      ...extractionProperties,
    ],
    examples: [
      { name: 'polite_goodbye', data: { name: 'Goodbye', prompt: 'Thank the caller for their time and say goodbye.' } },
    ],
    graph_constraints: { min_incoming: 1, max_outgoing: 0 },
  },
  {
    name: 'globalNode',
    display_name: 'Global',
    description: 'Instructions shared by every step that has "Add global prompt" on: persona, tone, common rules.',
    category: 'global_node',
    icon: 'Globe',
    version: '1.0.0',
    properties: [
      nameProperty,
      {
        name: 'prompt',
        type: 'mention_textarea',
        display_name: 'Global prompt',
        description: 'Text added to the prompt of every step that opts in.',
        llm_hint: 'Supports {{variable}} placeholders.',
      },
    ],
    examples: [
      { name: 'persona', data: { name: 'Persona', prompt: 'You are a friendly assistant. Keep answers short.' } },
    ],
    graph_constraints: { max_instances: 1, max_incoming: 0, max_outgoing: 0 },
  },
  {
    name: 'trigger',
    display_name: 'API Trigger',
    description: 'Lets an external system start an outbound call of this agent with one HTTP request.',
    category: 'trigger',
    icon: 'Zap',
    version: '1.0.0',
    properties: [
      nameProperty,
      enabledProperty('Accept calls started through this trigger.'),
      {
        name: 'trigger_path',
        type: 'string',
        display_name: 'Trigger path',
        description: 'Path segment of the trigger URL. Left empty, the server generates a unique one.',
        llm_hint: 'Omit it to get a server-generated UUID; it must be unique across the installation.',
        max_length: 36,
        pattern: '^[A-Za-z0-9_-]+$',
      },
    ],
    examples: [{ name: 'crm_trigger', data: { name: 'From CRM', enabled: true } }],
    graph_constraints: { max_incoming: 0 },
  },
  {
    name: 'webhook',
    display_name: 'Webhook',
    description: 'Sends the call results to an HTTP endpoint after the call ends.',
    category: 'integration',
    icon: 'Send',
    version: '1.0.0',
    properties: [
      nameProperty,
      enabledProperty('Send the request after each call.'),
      {
        name: 'http_method',
        type: 'options',
        display_name: 'Method',
        description: 'HTTP method of the request.',
        default: 'POST',
        options: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((method) => ({ value: method, label: method })),
      },
      {
        name: 'endpoint_url',
        type: 'url',
        display_name: 'URL',
        description: 'Where the request is sent.',
        placeholder: 'https://example.com/hooks/calls',
      },
      {
        name: 'credential_uuid',
        type: 'credential_ref',
        display_name: 'Credential',
        description: 'Credential sent with the request, if the endpoint needs one.',
      },
      {
        name: 'custom_headers',
        type: 'fixed_collection',
        display_name: 'Headers',
        description: 'Extra HTTP headers sent with the request.',
        properties: [
          { name: 'key', type: 'string', display_name: 'Header', description: 'Header name.', required: true },
          { name: 'value', type: 'string', display_name: 'Value', description: 'Header value.', required: true },
        ],
      },
      {
        name: 'payload_template',
        type: 'json',
        display_name: 'Payload',
        description: 'JSON body of the request; string values may use {{variable}} placeholders.',
      },
    ],
    examples: [
      {
        name: 'post_results',
        data: { name: 'Send results', http_method: 'POST', endpoint_url: 'https://example.com/hooks/calls' },
      },
    ],
    graph_constraints: { max_incoming: 0, max_outgoing: 0 },
  },
  {
    name: 'qa',
    display_name: 'Quality Review',
    description: 'Reviews the transcript of finished calls with a language model and stores the verdict.',
    category: 'integration',
    icon: 'ClipboardCheck',
    version: '1.0.0',
    properties: [
      nameProperty,
      {
        name: 'qa_enabled',
        type: 'boolean',
        display_name: 'Enabled',
        description: 'Review calls of this agent.',
        default: true,
      },
      {
        name: 'qa_system_prompt',
        type: 'string',
        display_name: 'Review instructions',
        description: 'What the reviewer should check and how to report it.',
        editor: 'textarea',
      },
      {
        name: 'qa_min_call_duration',
        type: 'number',
        display_name: 'Minimum duration (seconds)',
        description: 'Calls shorter than this are not reviewed.',
        default: 15,
        min_value: 0,
      },
      {
        name: 'qa_voicemail_calls',
        type: 'boolean',
        display_name: 'Review voicemail calls',
        description: 'Also review calls that reached a voicemail.',
        default: false,
      },
      {
        name: 'qa_sample_rate',
        type: 'number',
        display_name: 'Sample rate (%)',
        description: 'Share of eligible calls that are reviewed, in percent.',
        default: 100,
        min_value: 0,
        max_value: 100,
      },
      {
        name: 'qa_use_workflow_llm',
        type: 'boolean',
        display_name: "Use the agent's model",
        description: 'Review with the same language model as the agent; turn off to choose another one below.',
        default: true,
      },
      {
        name: 'qa_provider',
        type: 'options',
        display_name: 'Model provider',
        description: 'Provider of the review model.',
        display_options: { show: { qa_use_workflow_llm: [false] } },
        options: ['openai', 'azure', 'openrouter', 'anthropic'].map((provider) => ({
          value: provider,
          label: provider,
        })),
      },
      {
        name: 'qa_model',
        type: 'string',
        display_name: 'Model',
        description: 'Model identifier, as the provider names it.',
        display_options: { show: { qa_use_workflow_llm: [false] } },
      },
      {
        name: 'qa_api_key',
        type: 'string',
        display_name: 'API key',
        description: "Key for the provider's API.",
        display_options: { show: { qa_use_workflow_llm: [false] } },
      },
      {
        name: 'qa_endpoint',
        type: 'url',
        display_name: 'Endpoint',
        description: 'Base URL of the provider, for providers hosted per customer.',
        display_options: { show: { qa_use_workflow_llm: [false] } },
      },
    ],
    examples: [{ name: 'review_all', data: { name: 'Review', qa_enabled: true, qa_sample_rate: 100 } }],
    graph_constraints: { max_instances: 1, max_incoming: 0, max_outgoing: 0 },
  },
  {
    name: 'tuner',
    display_name: 'Tuner',
    description: 'Sends finished calls to an external voice-agent tuning and analytics service.',
    category: 'integration',
    icon: 'SlidersHorizontal',
    version: '1.0.0',
    properties: [
      nameProperty,
      {
        name: 'tuner_enabled',
        type: 'boolean',
        display_name: 'Enabled',
        description: 'Send calls of this agent to the service.',
        default: true,
      },
      {
        name: 'tuner_agent_id',
        type: 'string',
        display_name: 'Agent ID',
        description: 'Identifier of the agent at the service.',
        required: true,
      },
      {
        name: 'tuner_workspace_id',
        type: 'number',
        display_name: 'Workspace ID',
        description: 'Numeric identifier of the workspace at the service.',
        required: true,
      },
      {
        name: 'tuner_api_key',
        type: 'string',
        display_name: 'API key',
        description: "Key for the service's API.",
        required: true,
      },
    ],
    examples: [
      {
        name: 'send_calls',
        data: { name: 'Tuning', tuner_agent_id: 'agent-1', tuner_workspace_id: 42, tuner_api_key: 'key' },
      },
    ],
    graph_constraints: { max_instances: 1, max_incoming: 0, max_outgoing: 0 },
  },
]

const NODE_SPECS_BY_NAME = new Map(NODE_SPECS.map((spec) => [spec.name, spec]))

export function listNodeTypes(): NodeSpec[] {
  return NODE_SPECS
}

export function getNodeType(name: string): NodeSpec | undefined {
  return NODE_SPECS_BY_NAME.get(name)
}
