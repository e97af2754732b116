import { hostNotWrittenOut } from '../egress/network-policy'
import { ARI_PROVIDER, validateDestination } from '../lib/phone'
import { valueError, type Loc, type ValidationItem } from '../lib/validation'
import type {
  EndCallConfig,
  HttpApiConfig,
  McpConfig,
  SpokenMessage,
  ToolDefinition,
  ToolDefinitionInput,
  TransferCallConfig,
} from './schemas'

/**
 * A definition the API schema accepted → the stored definition: the rules one field cannot express (a message type
 * needs its message, names unique, the URL's host written out, …) as 422 items under `loc`, and every default filled
 * in, so the runtime reads complete configs.
 */

const DEFAULT_TIMEOUT_MS = 5000
const DEFAULT_TRANSFER_TIMEOUT_SECONDS = 30
const DEFAULT_MCP_TIMEOUT_SECONDS = 30
const MAX_HEADERS = 50
const MAX_HEADER_VALUE_LENGTH = 4096
const MAX_BODY_TEMPLATE_BYTES = 65_536
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/
const PLACEHOLDER = /\{\{[^}]*\}\}/g
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

type Input<T extends ToolDefinition['type']> = NonNullable<Extract<ToolDefinitionInput, { type: T }>['config']>

const text = (value: string | null | undefined): string | null => (value == null || value.trim() === '' ? null : value)

export type CheckedDefinition = { definition: ToolDefinition; problems: ValidationItem[] }

/** `loc` points at the definition (e.g. ['body', 'definition']); problems are placed under its type and config. */
export function checkDefinition(input: ToolDefinitionInput, loc: Loc): CheckedDefinition {
  const problems: ValidationItem[] = []
  const at = (...path: (string | number)[]): Loc => [...loc, input.type, 'config', ...path]
  const fail = (path: Loc, message: string, value: unknown) => problems.push(valueError(path, message, value))
  let definition: ToolDefinition
  switch (input.type) {
    case 'http_api':
      definition = { schema_version: 1, type: 'http_api', config: httpConfig(input.config, at, fail) }
      break
    case 'end_call':
      definition = { schema_version: 1, type: 'end_call', config: endCallConfig(input.config ?? {}, at, fail) }
      break
    case 'transfer_call':
      definition = { schema_version: 1, type: 'transfer_call', config: transferConfig(input.config, at, fail) }
      break
    case 'calculator':
      definition = { schema_version: 1, type: 'calculator', config: {} }
      break
    case 'mcp':
      definition = { schema_version: 1, type: 'mcp', config: mcpConfig(input.config, at, fail) }
      break
  }
  return { definition, problems }
}

type At = (...path: (string | number)[]) => Loc
type Fail = (path: Loc, message: string, value: unknown) => void

function httpConfig(config: Input<'http_api'>, at: At, fail: Fail): HttpApiConfig {
  checkUrl(config.url, at('url'), fail)
  const headers = config.headers ?? {}
  const headerNames = Object.keys(headers)
  if (headerNames.length > MAX_HEADERS)
    fail(at('headers'), `at most ${MAX_HEADERS} headers are allowed`, headerNames.length)
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name))
      fail(at('headers', name), "a header name is a token of letters, digits and !#$%&'*+.^_`|~-", name)
    else if (typeof value !== 'string' || value.length > MAX_HEADER_VALUE_LENGTH || /[\r\n\0]/.test(value)) {
      fail(
        at('headers', name),
        `a header value is one line of at most ${MAX_HEADER_VALUE_LENGTH} characters`,
        typeof value === 'string' ? value.slice(0, 100) : value,
      )
    }
  }
  const parameters = (config.parameters ?? []).map((parameter) => ({
    ...parameter,
    required: parameter.required ?? true,
  }))
  const presets = (config.preset_parameters ?? []).map((preset) => ({ ...preset, required: preset.required ?? true }))
  const seen = new Set<string>()
  const checkName = (name: string, path: Loc) => {
    if (seen.has(name)) fail(path, `the argument name '${name}' is used twice`, name)
    seen.add(name)
  }
  parameters.forEach(({ name }, index) => checkName(name, at('parameters', index, 'name')))
  presets.forEach(({ name }, index) => checkName(name, at('preset_parameters', index, 'name')))
  const bodyTemplate = config.body_template ?? null
  if (bodyTemplate !== null) {
    if (!BODY_METHODS.has(config.method))
      fail(at('body_template'), `a ${config.method} request has no body: use POST, PUT or PATCH`, null)
    const size = new TextEncoder().encode(JSON.stringify(bodyTemplate)).length
    if (size > MAX_BODY_TEMPLATE_BYTES)
      fail(
        at('body_template'),
        `the body template is ${size} bytes; at most ${MAX_BODY_TEMPLATE_BYTES} are allowed`,
        null,
      )
  }
  const messageType = config.customMessageType ?? null
  if (messageType === 'text' && !text(config.customMessage))
    fail(at('customMessage'), 'a text message needs customMessage', config.customMessage ?? null)
  if (messageType === 'audio' && !text(config.customMessageRecordingId)) {
    fail(
      at('customMessageRecordingId'),
      'an audio message needs customMessageRecordingId',
      config.customMessageRecordingId ?? null,
    )
  }
  return {
    method: config.method,
    url: config.url,
    headers,
    credential_uuid: text(config.credential_uuid),
    parameters,
    preset_parameters: presets,
    timeout_ms: config.timeout_ms ?? DEFAULT_TIMEOUT_MS,
    body_template: bodyTemplate,
    customMessage: text(config.customMessage),
    customMessageType: messageType,
    customMessageRecordingId: text(config.customMessageRecordingId),
  }
}

/** What the server offers is not known yet: the service lists it (tools/mcp.ts). */
function mcpConfig(config: Input<'mcp'>, at: At, fail: Fail): McpConfig {
  if (config.url.includes('{{')) fail(at('url'), "an MCP server's URL cannot hold placeholders", config.url)
  else checkUrl(config.url, at('url'), fail)
  return {
    transport: config.transport ?? 'streamable_http',
    url: config.url,
    credential_uuid: text(config.credential_uuid),
    tools_filter: [...new Set(config.tools_filter ?? [])],
    timeout_secs: config.timeout_secs ?? DEFAULT_MCP_TIMEOUT_SECONDS,
    discovered_tools: [],
    discovered_at: null,
    discovery_error: null,
  }
}

export const sameMcpServer = (a: McpConfig, b: McpConfig) => a.url === b.url && a.transport === b.transport

/** A new definition of the same MCP server keeps the last listing until the next one comes (tools/mcp.ts). */
export function keepDiscovery(next: ToolDefinition, previous: ToolDefinition): ToolDefinition {
  if (next.type !== 'mcp' || previous.type !== 'mcp' || !sameMcpServer(next.config, previous.config)) return next
  const { discovered_tools, discovered_at, discovery_error } = previous.config
  return { ...next, config: { ...next.config, discovered_tools, discovered_at, discovery_error } }
}

/** http(s), no credentials in it, and a host written out (placeholders only after it), so the allow-list means something. */
function checkUrl(url: string, loc: Loc, fail: Fail) {
  const hostProblem = hostNotWrittenOut(url)
  if (hostProblem) return fail(loc, hostProblem, url)
  if (/^https?:\/\/[^/?#\\]*@/i.test(url))
    return fail(loc, 'the URL cannot carry credentials: use credential_uuid', url)
  try {
    new URL(url.replace(PLACEHOLDER, 'x'))
  } catch {
    fail(loc, 'this is not a valid URL', url)
  }
}

function spokenMessage(config: Partial<Record<keyof SpokenMessage, string | null>>, at: At, fail: Fail): SpokenMessage {
  const messageType = (config.messageType ?? 'none') as SpokenMessage['messageType']
  if (messageType === 'custom' && !text(config.customMessage))
    fail(at('customMessage'), 'a custom message needs customMessage', config.customMessage ?? null)
  if (messageType === 'audio' && !text(config.audioRecordingId))
    fail(at('audioRecordingId'), 'an audio message needs audioRecordingId', config.audioRecordingId ?? null)
  return { messageType, customMessage: text(config.customMessage), audioRecordingId: text(config.audioRecordingId) }
}

function endCallConfig(config: Input<'end_call'>, at: At, fail: Fail): EndCallConfig {
  return {
    ...spokenMessage(config, at, fail),
    endCallReason: config.endCallReason ?? false,
    endCallReasonDescription: text(config.endCallReasonDescription),
  }
}

function transferConfig(config: Input<'transfer_call'>, at: At, fail: Fail): TransferCallConfig {
  const source = config.destination_source ?? 'static'
  const destination = text(config.destination)
  const destinations = (config.destinations ?? []).map((choice) => ({
    ...choice,
    description: text(choice.description),
  }))
  const checkDestination = (value: string, path: Loc) => {
    if (value.includes('{{')) return
    // A tool belongs to no telephony configuration: whether a raw dial string may be dialled is the rule of the call's
    // configuration, applied when the transfer dials (telephony/ari/call-session.ts).
    const problem = validateDestination(value, ARI_PROVIDER, { rawDialStrings: true })
    if (problem) fail(path, `the destination ${problem}`, value)
  }
  if (source === 'static') {
    if (!destination) fail(at('destination'), 'a static transfer needs a destination', config.destination ?? null)
    else checkDestination(destination, at('destination'))
  } else {
    if (destinations.length === 0)
      fail(at('destinations'), 'llm_choice needs at least one destination to choose from', [])
    const names = new Set<string>()
    destinations.forEach((choice, index) => {
      const name = choice.name.toLowerCase()
      if (names.has(name))
        fail(at('destinations', index, 'name'), `the name '${choice.name}' is used twice`, choice.name)
      names.add(name)
      checkDestination(choice.destination, at('destinations', index, 'destination'))
    })
  }
  return {
    ...spokenMessage(config, at, fail),
    destination_source: source,
    destination: source === 'static' ? destination : null,
    destinations: source === 'llm_choice' ? destinations : [],
    timeout: config.timeout ?? DEFAULT_TRANSFER_TIMEOUT_SECONDS,
  }
}
