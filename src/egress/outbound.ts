import { lookup } from 'node:dns/promises'
import { isIP, isIPv6 } from 'node:net'
import { bareHost, hostAllowed, targetsAppliance, type ApplianceAddress } from './network-policy'
import { cappedStream, readCappedText } from '../lib/capped-body'

/**
 * Every request Ringbase sends to a URL an admin or an agent definition names (http_api tools, webhook nodes, pre-call
 * fetch) goes through `sendOutbound`: refused unless the organization's allow-list has the host and it is not this
 * appliance; the host name resolved once and every address checked; the request connected to a checked address with
 * the name as Host and TLS server name (so a second DNS answer cannot bring it here); redirects followed only within
 * the same host, to those same addresses; one timeout over the whole exchange; at most `maxBodyBytes` of the answer read.
 */

export type OutboundPolicy = {
  /** The organization's allow-list; null allows any host. */
  allowedHosts: readonly string[] | null
  appliance: ApplianceAddress
  /** Addresses of a host name; the default asks the system resolver. */
  resolve?(hostname: string): Promise<string[]>
  fetch?: typeof fetch
}

export type OutboundRequest = {
  url: string | URL
  method: string
  headers: Headers | Record<string, string>
  body?: string | null
}

export type OutboundOptions = {
  timeoutMs: number
  /** The caller's own reason to stop early (e.g. the call ended). */
  signal?: AbortSignal
  /** How much of the answer's body is read (the rest never is); 0 reads none. */
  maxBodyBytes: number
  /**
   * `all`: same-host redirects of any kind, a 301/302 after a POST and a 303 turning it into a GET (as browsers do).
   * `keeping-method`: only 307 and 308, which send the same method and body again; any other 3xx is the answer. For a
   * delivery whose body is the point (a GET without it would pass for delivered).
   */
  redirects: 'all' | 'keeping-method'
}

export type OutboundAnswer = { status: number; text: string; truncated: boolean }

/** A failure told in words, for a run's log or the model. */
export class OutboundFailure extends Error {}

/** Not sent, by the rules or because of the URL itself: sending it again cannot succeed. */
export class OutboundRefused extends OutboundFailure {}

const MAX_REDIRECTS = 5

export const resolveHostAddresses = async (hostname: string): Promise<string[]> =>
  (await lookup(hostname, { all: true })).map(({ address }) => address)

/** The resolver's answer (none when it fails), or the signal's reason once it aborts: a lookup cannot outlast the timeout. */
function resolveUntilAborted(host: string, policy: OutboundPolicy, signal: AbortSignal): Promise<string[]> {
  signal.throwIfAborted()
  const aborted = new Promise<never>((_, reject) =>
    signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
  )
  return Promise.race([(policy.resolve ?? resolveHostAddresses)(host).catch(() => []), aborted])
}

/**
 * Refuses a URL the rules do not allow, else answers the addresses its host may be reached at: the name is resolved
 * once here and every address checked, so that the request goes to one of these.
 */
async function checkTarget(url: URL, policy: OutboundPolicy, signal: AbortSignal): Promise<string[]> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OutboundRefused('Only http and https URLs can be called')
  if (!hostAllowed(url, policy.allowedHosts))
    throw new OutboundRefused(`The host ${url.host} is not on this organization's list of allowed hosts`)
  const host = bareHost(url.hostname)
  const addresses = isIP(host) !== 0 ? [host] : await resolveUntilAborted(host, policy, signal)
  if (addresses.length === 0) throw new OutboundFailure(`The host ${url.hostname} could not be found`)
  if (targetsAppliance(url, addresses, policy.appliance))
    throw new OutboundRefused('This server itself is never called')
  return addresses
}

/** Failures to connect: nothing was sent, so the next address may be tried. */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL'])

/**
 * The request to `url`, connected to one of the checked `addresses` in turn until one takes the connection, with the
 * URL's own Host header and TLS server name (so virtual hosts and certificates work as with the name).
 */
async function fetchAt(url: URL, addresses: string[], init: RequestInit, policy: OutboundPolicy): Promise<Response> {
  const fetchImpl = policy.fetch ?? fetch
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

const FOLLOWED: Record<OutboundOptions['redirects'], Set<number>> = {
  all: new Set([301, 302, 303, 307, 308]),
  'keeping-method': new Set([307, 308]),
}

async function follow(
  request: OutboundRequest,
  policy: OutboundPolicy,
  redirects: OutboundOptions['redirects'],
  signal: AbortSignal,
): Promise<Response> {
  let url: URL
  try {
    url = new URL(request.url)
  } catch {
    // Not echoed: a URL's path and query may carry a secret, and this message goes to logs, runs and models.
    throw new OutboundRefused('The URL is not valid')
  }
  let { method } = request
  let body = request.body ?? undefined
  const addresses = await checkTarget(url, policy, signal)
  for (let hop = 0; ; hop++) {
    const response = await fetchAt(
      url,
      addresses,
      { method, headers: request.headers, body, redirect: 'manual', signal },
      policy,
    )
    const location = response.headers.get('location')
    if (!FOLLOWED[redirects].has(response.status) || location === null) return response
    await response.body?.cancel().catch(() => undefined)
    const next = new URL(location, url)
    if (next.host !== url.host || next.protocol !== url.protocol) {
      throw new OutboundRefused(
        `The service redirected to another host (${next.host}); only redirects within ${url.host} are followed`,
      )
    }
    if (hop + 1 >= MAX_REDIRECTS) throw new OutboundRefused(`More than ${MAX_REDIRECTS} redirects`)
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
      method = 'GET'
      body = undefined
    }
    url = next
  }
}

/**
 * Sends `request` under `policy`. Throws OutboundRefused when it may not be sent (or a redirect may not be followed),
 * OutboundFailure when the host is unknown or no answer came within the timeout, and the network's own error otherwise
 * (an AbortError when the caller's signal ended it).
 */
export async function sendOutbound(
  request: OutboundRequest,
  policy: OutboundPolicy,
  options: OutboundOptions,
): Promise<OutboundAnswer> {
  const timeout = new AbortController()
  const timer = setTimeout(() => timeout.abort(), options.timeoutMs)
  const signal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal
  try {
    const response = await follow(request, policy, options.redirects, signal)
    const { text, truncated } = await readCappedText(response.body, options.maxBodyBytes)
    return { status: response.status, text, truncated }
  } catch (error) {
    if (timeout.signal.aborted && !(error instanceof OutboundFailure))
      throw new OutboundFailure(`No answer within ${options.timeoutMs} ms`)
    throw error
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A `fetch` for a client library that makes its own requests (the MCP SDK): each one sent under `policy` as
 * `sendOutbound` sends (allow-list, never this appliance, connected to the checked addresses, same-host 307/308
 * redirects only), its answer's body erroring once more than `maxBodyBytes` have come, so a client that reads a whole
 * answer cannot be made to hold more. Only string bodies are sent (JSON-RPC is text).
 */
export function policedFetch(policy: OutboundPolicy, maxBodyBytes: number): typeof fetch {
  const policed = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    if (input instanceof Request || (init.body != null && typeof init.body !== 'string'))
      throw new OutboundRefused('Only text request bodies are sent')
    const signal = init.signal ?? new AbortController().signal
    const response = await follow(
      { url: input, method: init.method ?? 'GET', headers: new Headers(init.headers), body: init.body },
      policy,
      'keeping-method',
      signal,
    )
    const { status, statusText, headers } = response
    const body =
      response.body &&
      cappedStream(
        response.body,
        maxBodyBytes,
        () => new OutboundFailure(`The answer is larger than ${maxBodyBytes} bytes`),
      )
    return new Response(body, { status, statusText, headers })
  }
  return policed as typeof fetch
}

/** A failure in a few words for a log: the failure's own words, else the system's error code (ECONNREFUSED, …). */
export function outboundFailureReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const code = (error as { code?: unknown }).code
  return error instanceof OutboundFailure || typeof code !== 'string' ? error.message : code
}
