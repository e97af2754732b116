import { placeholderPaths, renderTemplate, templateValue } from '../definition/template-variables'
import { isPlainObject } from '../lib/values'
import { OutboundFailure, sendOutbound, type OutboundPolicy } from '../egress/outbound'
import type { HttpApiConfig, ParameterType, PresetParameter } from './schemas'

/**
 * Runs an http_api tool call: preset arguments from the run's variables, the model's arguments, the URL, headers,
 * credential and body, then one request under the organization's network rules. The model gets
 * `{status: 'success' | 'error', status_code, data}` for any HTTP answer (an HTTP error status is 'error'), or
 * `{status: 'error', error}` when there was none; the run's log gets method, host, status and duration, never the
 * path, query, headers or credential.
 */

export type HttpRequestLog = { method: string; host: string; status_code: number | null; duration_ms: number }

export type HttpToolOutcome = { result: Record<string, unknown>; request?: HttpRequestLog }

export type HttpToolEnvironment = OutboundPolicy & {
  /** The headers a credential adds; throws when it cannot be used (gone, undecryptable). */
  credentialHeaders(credentialUuid: string): Promise<Record<string, string>>
}

/** What the model reads of a response body; the rest is not read at all. */
export const MAX_RESPONSE_BYTES = 16 * 1024
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

const failure = (error: string): Record<string, unknown> => ({ status: 'error', error })

class ToolCallFailure extends Error {}

/** A rendered preset in its declared type (the reference's coercion); throws ToolCallFailure when it cannot be. */
function coerce(value: unknown, type: ParameterType, name: string): unknown {
  const fail = () => {
    throw new ToolCallFailure(`Preset parameter '${name}' is not a valid ${type}`)
  }
  switch (type) {
    case 'string':
      return typeof value === 'string' ? value : JSON.stringify(value)
    case 'number': {
      const number =
        typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN
      return Number.isFinite(number) ? number : fail()
    }
    case 'boolean': {
      if (typeof value === 'boolean') return value
      if (typeof value === 'number') return value !== 0
      const text = String(value).trim().toLowerCase()
      if (['true', '1', 'yes', 'y', 'on'].includes(text)) return true
      if (['false', '0', 'no', 'n', 'off'].includes(text)) return false
      return fail()
    }
    case 'object':
    case 'array': {
      let parsed = value
      if (typeof value === 'string')
        try {
          parsed = JSON.parse(value)
        } catch {
          fail()
        }
      return (type === 'object' ? isPlainObject(parsed) : Array.isArray(parsed)) ? parsed : fail()
    }
  }
}

function resolvePresets(
  presets: PresetParameter[],
  variables: Record<string, unknown>,
  now: Date,
): Record<string, unknown> {
  const resolved: Record<string, unknown> = {}
  for (const preset of presets) {
    const value = templateValue(preset.value_template, variables, now)
    if (value === undefined || value === null || value === '') {
      if (preset.required) throw new ToolCallFailure(`Preset parameter '${preset.name}' has no value in this call`)
      continue
    }
    resolved[preset.name] = coerce(value, preset.type, preset.name)
  }
  return resolved
}

/** The body template with every string rendered (a lone placeholder keeps its value's type). */
function renderBody(template: unknown, context: Record<string, unknown>, now: Date): unknown {
  if (typeof template === 'string') return templateValue(template, context, now) ?? ''
  if (Array.isArray(template)) return template.map((item) => renderBody(item, context, now))
  if (isPlainObject(template))
    return Object.fromEntries(Object.entries(template).map(([key, value]) => [key, renderBody(value, context, now)]))
  return template
}

type PreparedRequest = { url: URL; method: string; headers: Headers; body?: string }

async function prepare(
  config: HttpApiConfig,
  args: Record<string, unknown>,
  variables: Record<string, unknown>,
  env: HttpToolEnvironment,
  now: Date,
): Promise<PreparedRequest> {
  const argumentsAll = { ...args, ...resolvePresets(config.preset_parameters, variables, now) }
  const context = { ...variables, ...argumentsAll }
  const url = new URL(renderTemplate(config.url, context, now, encodeURIComponent))
  const inUrl = new Set(placeholderPaths(config.url))
  const rest = Object.fromEntries(Object.entries(argumentsAll).filter(([name]) => !inUrl.has(name)))
  const headers = new Headers()
  for (const [name, value] of Object.entries(config.headers)) headers.set(name, renderTemplate(value, context, now))
  if (config.credential_uuid) {
    let credential: Record<string, string>
    try {
      credential = await env.credentialHeaders(config.credential_uuid)
    } catch {
      throw new ToolCallFailure('The credential of this tool cannot be used')
    }
    for (const [name, value] of Object.entries(credential)) headers.set(name, value)
  }
  if (!BODY_METHODS.has(config.method)) {
    for (const [name, value] of Object.entries(rest))
      url.searchParams.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value))
    return { url, method: config.method, headers }
  }
  if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  const body = config.body_template === null ? rest : renderBody(config.body_template, context, now)
  return { url, method: config.method, headers, body: JSON.stringify(body) }
}

function responseData(text: string, truncated: boolean): unknown {
  if (!truncated && text.trim() !== '') {
    try {
      return JSON.parse(text)
    } catch {
      /* not JSON: passed as text */
    }
  }
  return truncated ? { raw_response: text, truncated: true } : { raw_response: text }
}

export async function callHttpTool(
  config: HttpApiConfig,
  args: Record<string, unknown>,
  variables: Record<string, unknown>,
  env: HttpToolEnvironment,
  signal: AbortSignal,
  now: Date = new Date(),
): Promise<HttpToolOutcome> {
  let prepared: PreparedRequest
  try {
    prepared = await prepare(config, args, variables, env, now)
  } catch (error) {
    if (error instanceof ToolCallFailure) return { result: failure(error.message) }
    return { result: failure("The request could not be built from this tool's URL, headers and arguments") }
  }
  const started = performance.now()
  const log = (status_code: number | null): HttpRequestLog => ({
    method: prepared.method,
    host: prepared.url.host,
    status_code,
    duration_ms: Math.round(performance.now() - started),
  })
  try {
    const { status, text, truncated } = await sendOutbound(prepared, env, {
      timeoutMs: config.timeout_ms,
      signal,
      maxBodyBytes: MAX_RESPONSE_BYTES,
      redirects: 'all',
    })
    const ok = status >= 200 && status < 300
    return {
      result: { status: ok ? 'success' : 'error', status_code: status, data: responseData(text, truncated) },
      request: log(status),
    }
  } catch (error) {
    const message =
      error instanceof OutboundFailure
        ? error.message
        : signal.aborted
          ? 'The call ended before the request finished'
          : 'The service could not be reached'
    return { result: failure(message), request: log(null) }
  }
}
