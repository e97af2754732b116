import { lookup } from 'node:dns/promises'
import { isIP, isIPv6 } from 'node:net'
import { placeholderPaths, renderTemplate, templateValue } from '../agents/template-variables'
import { isPlainObject } from '../lib/values'
import { bareHost, hostAllowed, targetsAppliance, type ApplianceAddress } from './network-policy'
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

export type HttpToolEnvironment = {
  /** The organization's allow-list; null allows any host. */
  allowedHosts: readonly string[] | null
  appliance: ApplianceAddress
  /** The headers a credential adds; throws when it cannot be used (gone, undecryptable). */
  credentialHeaders(credentialUuid: string): Promise<Record<string, string>>
  fetch?: typeof fetch
  /** Addresses of a host name; the default asks the system resolver. */
  resolve?(hostname: string): Promise<string[]>
}

/** What the model reads of a response body; the rest is not read at all. */
export const MAX_RESPONSE_BYTES = 16 * 1024
const MAX_REDIRECTS = 5
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

const systemResolve = async (hostname: string) => (await lookup(hostname, { all: true })).map(({ address }) => address)

const failure = (error: string): Record<string, unknown> => ({ status: 'error', error })

class ToolCallFailure extends Error {}

/** A rendered preset in its declared type (the reference's coercion); throws ToolCallFailure when it cannot be. */
function coerce(value: unknown, type: ParameterType, name: string): unknown {
  const fail = () => { throw new ToolCallFailure(`Preset parameter '${name}' is not a valid ${type}`) }
  switch (type) {
    case 'string': return typeof value === 'string' ? value : JSON.stringify(value)
    case 'number': {
      const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN
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
      if (typeof value === 'string') try { parsed = JSON.parse(value) } catch { fail() }
      return (type === 'object' ? isPlainObject(parsed) : Array.isArray(parsed)) ? parsed : fail()
    }
  }
}

function resolvePresets(presets: PresetParameter[], variables: Record<string, unknown>, now: Date): Record<string, unknown> {
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
  if (isPlainObject(template)) return Object.fromEntries(Object.entries(template).map(([key, value]) => [key, renderBody(value, context, now)]))
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
    for (const [name, value] of Object.entries(rest)) url.searchParams.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value))
    return { url, method: config.method, headers }
  }
  if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  const body = config.body_template === null ? rest : renderBody(config.body_template, context, now)
  return { url, method: config.method, headers, body: JSON.stringify(body) }
}

/**
 * Refuses a URL the organization's rules do not allow (the message is for the model), else answers the addresses
 * its host may be reached at: the name is resolved once here and every address checked, so that the request goes to
 * one of these and a second lookup (DNS rebinding) cannot send it to the appliance.
 */
async function checkTarget(url: URL, env: HttpToolEnvironment): Promise<string[]> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolCallFailure('Only http and https URLs can be called')
  if (!hostAllowed(url, env.allowedHosts)) throw new ToolCallFailure(`The host ${url.host} is not on this organization's list of allowed hosts`)
  const host = bareHost(url.hostname)
  const addresses = isIP(host) !== 0 ? [host] : await (env.resolve ?? systemResolve)(host).catch(() => [])
  if (addresses.length === 0) throw new ToolCallFailure(`The host ${url.hostname} could not be found`)
  if (targetsAppliance(url, addresses, env.appliance)) throw new ToolCallFailure('Tools cannot call this appliance itself')
  return addresses
}

/** Failures to connect: nothing was sent, so the next address may be tried. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL'])

/**
 * The request to `url`, connected to one of the checked `addresses` in turn until one takes the connection, with the
 * URL's own Host header and TLS server name (so virtual hosts and certificates work as with the name).
 */
async function fetchAt(url: URL, addresses: string[], init: RequestInit, env: HttpToolEnvironment): Promise<Response> {
  const fetchImpl = env.fetch ?? fetch
  const headers = new Headers(init.headers)
  headers.set('host', url.host)
  const tls = url.protocol === 'https:' && isIP(bareHost(url.hostname)) === 0 ? { serverName: url.hostname } : undefined
  for (let index = 0; ; index++) {
    const direct = new URL(url)
    direct.hostname = isIPv6(addresses[index]) ? `[${addresses[index]}]` : addresses[index]
    try {
      return await fetchImpl(direct, { ...init, headers, tls })
    } catch (error) {
      if (index + 1 === addresses.length || !CONNECT_FAILURES.has((error as { code?: string }).code ?? '')) throw error
    }
  }
}

/** At most `limit` bytes of the body as text; `truncated` when there was more (the rest is never read). */
async function readCapped(response: Response, limit: number): Promise<{ text: string; truncated: boolean }> {
  if (!response.body) return { text: '', truncated: false }
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  let truncated = false
  while (true) {
    const { done, value } = await reader.read()
    if (done) break
    if (size + value.length > limit) {
      chunks.push(value.subarray(0, limit - size))
      truncated = true
      await reader.cancel().catch(() => undefined)
      break
    }
    chunks.push(value)
    size += value.length
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks)), truncated }
}

function responseData(text: string, truncated: boolean): unknown {
  if (!truncated && text.trim() !== '') {
    try { return JSON.parse(text) } catch { /* not JSON: passed as text */ }
  }
  return truncated ? { raw_response: text, truncated: true } : { raw_response: text }
}

/** Follows redirects only within the same host and port, to the addresses checked for the first request. */
async function send(prepared: PreparedRequest, env: HttpToolEnvironment, signal: AbortSignal): Promise<Response> {
  let { url, method, body } = prepared
  const addresses = await checkTarget(url, env)
  for (let hop = 0; ; hop++) {
    const response = await fetchAt(url, addresses, { method, headers: prepared.headers, body, redirect: 'manual', signal }, env)
    const location = response.headers.get('location')
    if (response.status < 300 || response.status >= 400 || location === null) return response
    await response.body?.cancel().catch(() => undefined)
    const next = new URL(location, url)
    if (next.host !== url.host || next.protocol !== url.protocol) {
      throw new ToolCallFailure(`The service redirected to another host (${next.host}); only redirects within ${url.host} are followed`)
    }
    if (hop + 1 >= MAX_REDIRECTS) throw new ToolCallFailure(`More than ${MAX_REDIRECTS} redirects`)
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
      method = 'GET'
      body = undefined
    }
    url = next
  }
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
    return { result: failure('The request could not be built from this tool\'s URL, headers and arguments') }
  }
  const started = performance.now()
  const log = (status_code: number | null): HttpRequestLog => ({
    method: prepared.method, host: prepared.url.host, status_code, duration_ms: Math.round(performance.now() - started),
  })
  const timeout = new AbortController()
  const timer = setTimeout(() => timeout.abort(), config.timeout_ms)
  try {
    const response = await send(prepared, env, AbortSignal.any([signal, timeout.signal]))
    const { text, truncated } = await readCapped(response, MAX_RESPONSE_BYTES)
    return {
      result: { status: response.ok ? 'success' : 'error', status_code: response.status, data: responseData(text, truncated) },
      request: log(response.status),
    }
  } catch (error) {
    if (error instanceof ToolCallFailure) return { result: failure(error.message), request: log(null) }
    const message = timeout.signal.aborted ? `No answer within ${config.timeout_ms} ms`
      : signal.aborted ? 'The call ended before the request finished'
        : 'The service could not be reached'
    return { result: failure(message), request: log(null) }
  } finally {
    clearTimeout(timer)
  }
}
