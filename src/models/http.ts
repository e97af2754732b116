import { isIP, isIPv6 } from 'node:net'
import { bareHost, reachesThisMachine, targetsAppliance, type ApplianceAddress } from '../egress/network-policy'
import { THIS_SERVER_MESSAGE } from '../egress/policy'
import { readCappedText } from '../lib/capped-body'
import { MultipartBody } from './multipart'
import { ModelServerError, type ModelFailureKind } from './types'

/**
 * How to tell whether a connection's server is on this machine (the app's resolver), and where its real failure
 * reasons go then; `appliance`: this Ringbase server's own address, which a model socket never connects to
 * (realtime-socket.ts). Every connection made from a stored one carries it (`connectionOf`).
 */
export type ThisMachineRule = {
  resolveHost(hostname: string): Promise<string[]>
  log: ModelLog
  appliance?: ApplianceAddress
}

/** Where a model server is and how to authenticate; `provider` names the service in usage keys. */
export type ModelConnection = {
  provider: string
  baseUrl: string
  apiKey?: string | null
  thisMachine?: ThisMachineRule
}

/**
 * `firstByteMs`: until the response headers arrive; `idleMs`: each wait for the body's next piece, the first included
 * (a stream that stalls half-way fails then, not at `totalMs`); `totalMs`: the whole exchange, body included.
 */
export type ModelTimeouts = { firstByteMs: number; idleMs: number; totalMs: number }

/** pino-compatible; the clients never pass a key to it. */
export type ModelLog = { warn(fields: object, message: string): void }

/**
 * What a caller learns of a failed exchange with a server on this machine: one message whatever went wrong, so the
 * model settings cannot be used to learn which of this machine's ports are open (refused, or what answered).
 */
export const onThisMachineFailed = (what: string) =>
  `${what} failed: the model server on this machine gave no usable answer (the reason is in the Ringbase log)`

const RESOLVED_KEEP_MS = 30_000
/** A name's addresses, per resolver, kept briefly: a conversation asks the same server many times in a row. */
const resolvedNames = new WeakMap<
  ThisMachineRule['resolveHost'],
  Map<string, { addresses: Promise<string[]>; until: number }>
>()

function resolveBriefly(resolveHost: ThisMachineRule['resolveHost'], hostname: string): Promise<string[]> {
  let names = resolvedNames.get(resolveHost)
  if (!names) resolvedNames.set(resolveHost, (names = new Map()))
  const now = Date.now()
  const known = names.get(hostname)
  if (known && known.until > now) return known.addresses
  for (const [name, entry] of names) if (entry.until <= now) names.delete(name)
  const addresses = resolveHost(hostname).catch(() => [])
  const entry = { addresses, until: now + RESOLVED_KEEP_MS }
  names.set(hostname, entry)
  // A failed lookup is shared by the requests waiting on it, not kept: the next request asks again.
  void addresses.then((found) => {
    if (found.length === 0 && names.get(hostname) === entry) names.delete(hostname)
  })
  return addresses
}

/** A model server's URL as it is connected to: an address in place of the name, which goes as Host and TLS server name. */
export type PinnedTarget = { url: string; host?: string; servername?: string }

/**
 * Where a request or socket to `url` (on the connection's server) may go. A connection made from a stored one (it
 * carries the app's resolver, `thisMachine`) is pinned: the host name is resolved once (kept briefly), refused when an
 * address is this Ringbase server itself, and the answer is one target per address, in the resolver's order, each with
 * the name as Host header and TLS server name, so a second DNS answer cannot move the connection elsewhere. Without a
 * resolver the URL goes as it is. Throws a ModelServerError (`unreachable`: the name has no address; `refused`).
 */
export async function pinnedTargets(connection: ModelConnection, url: string): Promise<PinnedTarget[]> {
  const rule = connection.thisMachine
  if (!rule) return [{ url }]
  const target = new URL(url)
  const host = bareHost(target.hostname)
  const addresses = isIP(host) !== 0 ? [host] : await resolveBriefly(rule.resolveHost, host)
  if (addresses.length === 0) throw new ModelServerError(`${host} could not be found`, null, 'unreachable')
  if (rule.appliance && targetsAppliance(new URL(connection.baseUrl), addresses, rule.appliance))
    throw new ModelServerError(THIS_SERVER_MESSAGE, null, 'refused')
  const name = {
    host: target.host,
    servername: isIP(host) === 0 && /^(https|wss):$/.test(target.protocol) ? host : undefined,
  }
  return addresses.map((address) => {
    const direct = new URL(target)
    direct.hostname = isIPv6(address) ? `[${address}]` : address
    return { url: direct.toString(), ...name }
  })
}

/** Whether `baseUrl` reaches this machine: literal addresses and `localhost` as written, a name by what it resolves to. */
export async function serverOnThisMachine(
  baseUrl: string,
  resolveHost: ThisMachineRule['resolveHost'],
): Promise<boolean> {
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch {
    return false
  }
  if (reachesThisMachine(url, [])) return true
  const host = bareHost(url.hostname)
  if (isIP(host) !== 0) return false
  return reachesThisMachine(url, await resolveBriefly(resolveHost, host))
}

export type ModelRequest = {
  /** What was being done, as the error messages say it: "chat completion", "transcription"… */
  what: string
  /** Below the base URL, e.g. `/chat/completions`. */
  path: string
  method?: 'GET' | 'POST'
  /** A plain object is sent as JSON. */
  body?: MultipartBody | Record<string, unknown>
  timeouts: ModelTimeouts
  /** The most the answer's body may hold (MODEL_ANSWER_MAX_BYTES unless said); past it the request fails. */
  maxBytes?: number
  signal?: AbortSignal
}

/**
 * What a model server may send, whatever it declares: memory stays bounded. A JSON answer, a model list or a streamed
 * chat answer up to 16 MiB (the largest public model lists are a few MB); speech sets its own cap. Of an error body
 * only the first 64 KiB are read (300 characters of it are shown).
 */
export const MODEL_ANSWER_MAX_BYTES = 16 * 1024 * 1024
const ERROR_BODY_MAX_BYTES = 64 * 1024

/** A response whose status was good; its body is still to be read, under the same timeouts and signal. */
export type ModelExchange = {
  response: Response
  /**
   * What to throw for an error met while reading or parsing the body: the caller's abort reason, else a
   * ModelServerError (for a server on this machine, the uniform one). Every error made from the answer goes through it.
   */
  failure(error: unknown): unknown
  /** The body's pieces as they come, each awaited under the idle timeout; past `maxBytes` in all it throws. */
  chunks(): AsyncGenerator<Uint8Array>
  /** Clears the timers and closes the connection if the body was not read to its end. Call it in `finally`. */
  end(): void
  /** The whole body as text, then `end`. */
  readText(): Promise<string>
}

const SERVER_MESSAGE_MAX = 300

/** The base URL as messages may show it: no user info, no query. */
function describeServer(baseUrl: string): string {
  try {
    const url = new URL(baseUrl)
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`
  } catch {
    return 'the configured base URL'
  }
}

/** The readable part of an error body: OpenAI's `error.message`, FastAPI's `detail`, or the text itself. */
function serverMessage(text: string): string {
  let message = text.trim()
  try {
    const body = JSON.parse(text)
    const error = body?.error
    const detail = body?.detail
    const picked =
      typeof error?.message === 'string'
        ? error.message
        : typeof error === 'string'
          ? error
          : typeof detail === 'string'
            ? detail
            : Array.isArray(detail)
              ? detail.map((item) => item?.msg ?? JSON.stringify(item)).join('; ')
              : typeof body?.message === 'string'
                ? body.message
                : null
    if (picked) message = picked
  } catch {
    // Not JSON: the text is the message.
  }
  message = message.replace(/\s+/g, ' ')
  if (message.length > SERVER_MESSAGE_MAX) message = `${message.slice(0, SERVER_MESSAGE_MAX)}…`
  return message || '(empty body)'
}

export function joinUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${path}`
}

/**
 * Sends one request to a model server. Resolves once a good status arrived; rejects with the caller's abort reason
 * when the signal fired, else with a ModelServerError whose message never contains the API key (servers like to
 * echo it back).
 */
export async function requestModel(connection: ModelConnection, request: ModelRequest): Promise<ModelExchange> {
  const { signal, timeouts } = request
  signal?.throwIfAborted()
  const apiKey = connection.apiKey || null
  const server = describeServer(connection.baseUrl)
  const scrub = (text: string) => (apiKey ? text.split(apiKey).join('[redacted]') : text)
  const onThisMachine = connection.thisMachine
    ? await serverOnThisMachine(connection.baseUrl, connection.thisMachine.resolveHost)
    : false
  // The real reason is logged; a caller of a server on this machine is told only that it failed.
  const told = (error: ModelServerError): ModelServerError => {
    if (!onThisMachine) return error
    connection.thisMachine!.log.warn(
      { server, reason: error.message, status: error.status },
      'model server on this machine failed',
    )
    return new ModelServerError(onThisMachineFailed(request.what), error.status, error.kind, true)
  }
  const fail = (detail: string, status: number | null = null, kind?: ModelFailureKind) =>
    told(new ModelServerError(scrub(`${request.what} failed: ${detail}`), status, kind))

  const controller = new AbortController()
  let timedOut: { message: string; kind: 'timeout' | 'stalled' } | null = null
  const onCallerAbort = () => controller.abort(signal?.reason)
  signal?.addEventListener('abort', onCallerAbort, { once: true })
  const timeout = (ms: number, what: string, kind: 'timeout' | 'stalled' = 'timeout') =>
    setTimeout(() => {
      timedOut = { message: `${server} ${what} ${ms} ms`, kind }
      controller.abort()
    }, ms)
  const firstByteTimer = timeout(timeouts.firstByteMs, 'did not answer within')
  const totalTimer = timeout(timeouts.totalMs, 'did not finish within')
  let idleTimer: ReturnType<typeof setTimeout> | undefined
  const end = () => {
    clearTimeout(firstByteTimer)
    clearTimeout(totalTimer)
    clearTimeout(idleTimer)
    signal?.removeEventListener('abort', onCallerAbort)
    controller.abort()
  }
  const failure = (error: unknown): unknown => {
    if (signal?.aborted) return signal.reason
    if (timedOut) return fail(timedOut.message, null, timedOut.kind)
    // Errors made from what the server streamed may quote the key too.
    if (error instanceof ModelServerError) {
      if (error.message === onThisMachineFailed(request.what)) return error
      return told(new ModelServerError(scrub(error.message), error.status, error.kind))
    }
    const reason = error instanceof Error ? ((error as Error & { code?: string }).code ?? error.message) : String(error)
    return fail(`${reason} (${server})`, null, 'unreachable')
  }

  const headers: Record<string, string> = {}
  if (apiKey) headers.authorization = `Bearer ${apiKey}`
  let body: MultipartBody | string | undefined
  if (request.body instanceof MultipartBody) {
    headers['content-type'] = request.body.contentType
    body = request.body
  } else if (request.body) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(request.body)
  }
  try {
    const targets = await pinnedTargets(connection, joinUrl(connection.baseUrl, request.path)).catch(
      (error: ModelServerError) => {
        throw fail(error.message, null, error.kind)
      },
    )
    const response = await fetchPinned(targets, { method: request.method ?? 'POST', headers, body }, controller.signal)
    clearTimeout(firstByteTimer)
    if (!response.ok) {
      const { text } = await readCappedText(response.body, ERROR_BODY_MAX_BYTES)
      throw fail(`${server} answered ${response.status}: ${serverMessage(text)}`, response.status)
    }
    const answerBody = response.body
    if (!answerBody) throw fail(`${server} answered with no body`)
    const maxBytes = request.maxBytes ?? MODEL_ANSWER_MAX_BYTES
    // Only the time spent waiting on the server counts: a consumer pacing itself (audio played out) is not idle.
    async function* chunks(): AsyncGenerator<Uint8Array> {
      const reader = answerBody!.getReader()
      let received = 0
      try {
        for (;;) {
          idleTimer = timeout(timeouts.idleMs, 'sent nothing for', 'stalled')
          const { done, value } = await reader.read()
          clearTimeout(idleTimer)
          if (done) return
          received += value.byteLength
          // `end()` then closes the connection: the rest is never read.
          if (received > maxBytes) throw fail(`${server} sent an answer larger than ${maxBytes} bytes`)
          yield value
        }
      } finally {
        clearTimeout(idleTimer)
        reader.releaseLock()
      }
    }
    const readText = async () => {
      try {
        const pieces: Uint8Array[] = []
        for await (const piece of chunks()) pieces.push(piece)
        return Buffer.concat(pieces).toString('utf8')
      } catch (error) {
        throw failure(error)
      } finally {
        end()
      }
    }
    return { response, failure, chunks, end, readText }
  } catch (error) {
    end()
    throw failure(error)
  }
}

/**
 * The request to the first of `targets` that takes the connection (a refused connection sent nothing, so the next
 * address is tried).
 */
async function fetchPinned(
  targets: PinnedTarget[],
  init: { method: string; headers: Record<string, string>; body?: MultipartBody | string },
  signal: AbortSignal,
): Promise<Response> {
  for (let index = 0; ; index++) {
    const { url, host, servername } = targets[index]
    try {
      return await fetch(url, {
        method: init.method,
        // laid out in the shared upload buffer in the same statement as fetch, which copies it
        body: init.body instanceof MultipartBody ? init.body.laidOut() : init.body,
        headers: host ? { ...init.headers, host } : init.headers,
        ...(servername ? { tls: { serverName: servername } } : {}),
        signal,
      })
    } catch (error) {
      const refused = (error as { code?: string }).code === 'ECONNREFUSED'
      if (!refused || signal.aborted || index + 1 === targets.length) throw error
    }
  }
}

/** Reads the whole answer and makes a value of it; an error made from it goes through the exchange's `failure`. */
export async function readAnswer<T>(exchange: ModelExchange, parse: (text: string) => T): Promise<T> {
  const text = await exchange.readText()
  try {
    return parse(text)
  } catch (error) {
    throw exchange.failure(error)
  }
}

export function parseJsonAnswer(text: string, what: string): any {
  try {
    return JSON.parse(text)
  } catch {
    throw new ModelServerError(`${what} failed: the server sent something that is not JSON`)
  }
}
