import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { callHttpTool, MAX_RESPONSE_BYTES, type HttpToolEnvironment } from '../../src/tools/http-tool'
import { hostAllowed, targetsAppliance } from '../../src/egress/network-policy'
import type { HttpApiConfig } from '../../src/tools/schemas'
import { httpApiConfig } from '../support/tools'

/** A local service the tool calls: it records each request and answers by path. */
type Seen = {
  method: string
  path: string
  query: Record<string, string>
  headers: Record<string, string>
  body: string
}
let service: Server<undefined>
let other: Server<undefined>
const seen: Seen[] = []
let base: string

beforeAll(() => {
  other = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => Response.json({ other: true }) })
  service = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      seen.push({
        method: request.method,
        path: decodeURIComponent(url.pathname),
        query: Object.fromEntries(url.searchParams),
        headers: Object.fromEntries(request.headers),
        body: await request.text(),
      })
      switch (url.pathname.split('/')[1]) {
        case 'missing':
          return Response.json({ detail: 'no such order' }, { status: 404 })
        case 'broken':
          return new Response('upstream exploded', { status: 503 })
        case 'slow':
          await Bun.sleep(2_000)
          return Response.json({ late: true })
        case 'huge':
          return new Response(JSON.stringify({ items: 'x'.repeat(1_000_000) }), {
            headers: { 'content-type': 'application/json' },
          })
        case 'away':
          return Response.redirect(`http://127.0.0.1:${other.port}/elsewhere`, 302)
        case 'moved':
          return Response.redirect('/orders/42', 301)
        case 'text':
          return new Response('plain words')
        default:
          return Response.json({ ok: true, path: decodeURIComponent(url.pathname) })
      }
    },
  })
  base = `http://127.0.0.1:${service.port}`
})
afterAll(() => {
  service.stop(true)
  other.stop(true)
})

const environment = (overrides: Partial<HttpToolEnvironment> = {}): HttpToolEnvironment => ({
  allowedHosts: null,
  appliance: { listenHost: '127.0.0.1', listenPort: 8000, publicUrl: 'https://voice.example.com' },
  credentialHeaders: async () => ({ authorization: 'Bearer s3cret-token' }),
  ...overrides,
})

const config = (overrides: Partial<HttpApiConfig> = {}): HttpApiConfig =>
  httpApiConfig({
    url: 'BASE/orders/{{order_number}}',
    parameters: [{ name: 'order_number', type: 'string', description: '', required: true }],
    ...overrides,
  })

async function call(
  overrides: Partial<HttpApiConfig>,
  args: Record<string, unknown>,
  variables: Record<string, unknown> = {},
  env = environment(),
) {
  const tool = config(overrides)
  tool.url = tool.url.replace('BASE', base)
  seen.length = 0
  return callHttpTool(tool, args, variables, env, new AbortController().signal)
}

describe('http_api tool calls against a local service', () => {
  test('success: URL values encoded, other arguments as query, credential header sent; the log has method, host, status and time only', async () => {
    const outcome = await call(
      { credential_uuid: 'cred-1', headers: { 'X-Agent': '{{agent_name}}' } },
      { order_number: 'A/1 ?x', note: 'hi there' },
      { agent_name: 'Ava' },
    )
    expect(outcome.result).toEqual({ status: 'success', status_code: 200, data: { ok: true, path: '/orders/A/1 ?x' } })
    expect(seen[0]).toMatchObject({ method: 'GET', query: { note: 'hi there' } })
    expect(seen[0].headers).toMatchObject({ authorization: 'Bearer s3cret-token', 'x-agent': 'Ava' })
    expect(outcome.request).toEqual({
      method: 'GET',
      host: `127.0.0.1:${service.port}`,
      status_code: 200,
      duration_ms: expect.any(Number),
    })
    expect(JSON.stringify(outcome)).not.toContain('s3cret')
  })

  test('4xx and 5xx come back as errors with their status and body', async () => {
    expect((await call({ url: 'BASE/missing/{{order_number}}' }, { order_number: '1' })).result).toEqual({
      status: 'error',
      status_code: 404,
      data: { detail: 'no such order' },
    })
    const broken = await call({ url: 'BASE/broken' }, { order_number: '1' })
    expect(broken.result).toEqual({ status: 'error', status_code: 503, data: { raw_response: 'upstream exploded' } })
    expect(broken.request?.status_code).toBe(503)
  })

  test('a service slower than timeout_ms is an error, and the request is logged without a status', async () => {
    const outcome = await call({ url: 'BASE/slow', timeout_ms: 100 }, { order_number: '1' })
    expect(outcome.result).toEqual({ status: 'error', error: 'No answer within 100 ms' })
    expect(outcome.request).toMatchObject({ method: 'GET', status_code: null })
  })

  test('a huge body is cut at 16 KB for the model', async () => {
    const outcome = await call({ url: 'BASE/huge' }, { order_number: '1' })
    const data = outcome.result.data as { raw_response: string; truncated: boolean }
    expect(outcome.result.status).toBe('success')
    expect(data.truncated).toBe(true)
    expect(data.raw_response.length).toBe(MAX_RESPONSE_BYTES)
    expect(JSON.stringify(outcome.result).length).toBeLessThan(MAX_RESPONSE_BYTES + 200)
  })

  test('redirects: followed within the host, refused to another host', async () => {
    const moved = await call({ url: 'BASE/moved' }, { order_number: '1' })
    expect(moved.result).toEqual({ status: 'success', status_code: 200, data: { ok: true, path: '/orders/42' } })
    const away = await call({ url: 'BASE/away' }, { order_number: '1' })
    expect(away.result).toEqual({
      status: 'error',
      error: `The service redirected to another host (127.0.0.1:${other.port}); only redirects within 127.0.0.1:${service.port} are followed`,
    })
  })

  test('non-JSON answers reach the model as raw_response', async () => {
    expect((await call({ url: 'BASE/text' }, {})).result).toEqual({
      status: 'success',
      status_code: 200,
      data: { raw_response: 'plain words' },
    })
  })

  test('POST: presets from run variables keep their JSON type when a lone placeholder, win over the model, and fill the body template', async () => {
    const outcome = await call(
      {
        method: 'POST',
        url: 'BASE/orders',
        preset_parameters: [
          { name: 'customer', type: 'object', value_template: '{{customer}}', required: true },
          { name: 'count', type: 'number', value_template: '{{gathered_context.count}}', required: true },
          { name: 'vip', type: 'boolean', value_template: 'yes', required: true },
          { name: 'note', type: 'string', value_template: 'for {{customer.name}}', required: false },
          { name: 'optional', type: 'string', value_template: '{{missing}}', required: false },
        ],
        body_template: {
          order: {
            customer: '{{customer}}',
            items: '{{count}}',
            flag: '{{vip}}',
            greeting: 'Hi {{customer.name}}',
            fixed: [1, true],
          },
        },
      },
      { count: 99, order_number: 'X' },
      { customer: { name: 'Dana', tier: 2 }, gathered_context: { count: '3' } },
    )
    expect(outcome.result.status).toBe('success')
    expect(JSON.parse(seen[0].body)).toEqual({
      order: { customer: { name: 'Dana', tier: 2 }, items: 3, flag: true, greeting: 'Hi Dana', fixed: [1, true] },
    })
    expect(seen[0].headers['content-type']).toBe('application/json')

    await call({ method: 'PUT', url: 'BASE/orders/{{order_number}}' }, { order_number: '7', qty: 2, tags: ['a'] })
    expect(seen[0]).toMatchObject({ method: 'PUT', path: '/orders/7' })
    expect(JSON.parse(seen[0].body)).toEqual({ qty: 2, tags: ['a'] })
  })

  test('a required preset without a value, or of the wrong type, fails before any request', async () => {
    const empty = await call(
      { preset_parameters: [{ name: 'id', type: 'string', value_template: '{{customer_id}}', required: true }] },
      { order_number: '1' },
    )
    expect(empty).toEqual({ result: { status: 'error', error: "Preset parameter 'id' has no value in this call" } })
    const wrong = await call(
      { preset_parameters: [{ name: 'n', type: 'number', value_template: 'many', required: true }] },
      { order_number: '1' },
    )
    expect(wrong.result).toEqual({ status: 'error', error: "Preset parameter 'n' is not a valid number" })
    expect(seen).toEqual([])
  })

  test('a credential that cannot be read fails the call without a request', async () => {
    const outcome = await call(
      { credential_uuid: 'gone' },
      { order_number: '1' },
      {},
      environment({
        credentialHeaders: async () => {
          throw new Error('not found')
        },
      }),
    )
    expect(outcome).toEqual({ result: { status: 'error', error: 'The credential of this tool cannot be used' } })
    expect(seen).toEqual([])
  })

  test('the organization allow-list and the appliance itself are enforced', async () => {
    const refused = await call({}, { order_number: '1' }, {}, environment({ allowedHosts: ['api.example.com'] }))
    expect(refused.result).toEqual({
      status: 'error',
      error: `The host 127.0.0.1:${service.port} is not on this organization's list of allowed hosts`,
    })
    expect(seen).toEqual([])
    const allowed = await call(
      {},
      { order_number: '1' },
      {},
      environment({ allowedHosts: [`127.0.0.1:${service.port}`] }),
    )
    expect(allowed.result.status).toBe('success')

    const itself = environment({
      appliance: { listenHost: '127.0.0.1', listenPort: service.port!, publicUrl: 'https://voice.example.com' },
    })
    expect((await call({}, { order_number: '1' }, {}, itself)).result).toEqual({
      status: 'error',
      error: 'This server itself is never called',
    })
    expect(seen).toEqual([])
  })
})

describe('host names: resolved once, every address checked, the request sent to a checked one (no DNS rebinding)', () => {
  /** A resolver answering `answers` in turn (the last one again after), counting its lookups. */
  function resolver(...answers: string[][]) {
    const lookups: string[] = []
    return { lookups, resolve: async (name: string) => answers[Math.min(lookups.push(name), answers.length) - 1] }
  }
  const partnerUrl = () => `http://api.partner.test:${service.port}/orders/{{order_number}}`

  test('a name that resolves to the address this server listens on, on its port, is refused without a request', async () => {
    const dns = resolver(['127.0.0.1'])
    const itself = environment({
      resolve: dns.resolve,
      appliance: { listenHost: '127.0.0.1', listenPort: service.port!, publicUrl: 'https://voice.example.com' },
    })
    expect((await call({ url: partnerUrl() }, { order_number: '1' }, {}, itself)).result).toEqual({
      status: 'error',
      error: 'This server itself is never called',
    })
    expect(seen).toEqual([])
    // every address counts, not just the first; IPv4-mapped IPv6 is the IPv4 address
    for (const answer of [['198.51.100.7', '127.0.0.1'], ['::ffff:127.0.0.1']]) {
      const env = environment({ resolve: resolver(answer).resolve, appliance: itself.appliance })
      expect((await call({ url: partnerUrl() }, { order_number: '1' }, {}, env)).result.error).toBe(
        'This server itself is never called',
      )
    }
    expect(seen).toEqual([])
  })

  test('the request goes to the address checked, with the name as Host, even when the name resolves elsewhere later; redirects too', async () => {
    // A rebinding name: first a harmless answer, then (to any second lookup) somewhere else.
    const dns = resolver(['127.0.0.1'], ['198.51.100.7'])
    const outcome = await call(
      { url: `http://api.partner.test:${service.port}/moved` },
      {},
      {},
      environment({ resolve: dns.resolve }),
    )
    expect(outcome.result).toEqual({ status: 'success', status_code: 200, data: { ok: true, path: '/orders/42' } })
    expect(dns.lookups).toEqual(['api.partner.test'])
    expect(seen.map((request) => [request.path, request.headers.host])).toEqual([
      ['/moved', `api.partner.test:${service.port}`],
      ['/orders/42', `api.partner.test:${service.port}`],
    ])
    expect(outcome.request?.host).toBe(`api.partner.test:${service.port}`)
  })

  test('an address that refuses the connection: the next checked one is tried; a name with no address is an error', async () => {
    // Nothing listens on 127.0.0.2 (the service is bound to 127.0.0.1 only).
    const outcome = await call(
      { url: partnerUrl() },
      { order_number: '5' },
      {},
      environment({ resolve: resolver(['127.0.0.2', '127.0.0.1']).resolve }),
    )
    expect(outcome.result).toEqual({ status: 'success', status_code: 200, data: { ok: true, path: '/orders/5' } })
    const unknown = await call(
      { url: partnerUrl() },
      { order_number: '5' },
      {},
      environment({
        resolve: async () => {
          throw new Error('ENOTFOUND')
        },
      }),
    )
    expect(unknown.result).toEqual({ status: 'error', error: 'The host api.partner.test could not be found' })
    expect(seen).toEqual([])
  })

  test('a lookup that never answers ends at the timeout like a slow service', async () => {
    const outcome = await call(
      { url: partnerUrl(), timeout_ms: 100 },
      { order_number: '1' },
      {},
      environment({ resolve: () => new Promise(() => undefined) }),
    )
    expect(outcome.result).toEqual({ status: 'error', error: 'No answer within 100 ms' })
  })

  test('https: connected to the checked address, with the name as Host and as the TLS server name (SNI and certificate)', async () => {
    const sent: { url: string; host: string | null; tls: unknown }[] = []
    const recordingFetch = (async (url: URL, init: RequestInit & { tls?: unknown }) => {
      sent.push({ url: String(url), host: new Headers(init.headers).get('host'), tls: init.tls })
      return Response.json({ ok: true })
    }) as unknown as typeof fetch
    const env = environment({ resolve: resolver(['2001:db8::7']).resolve, fetch: recordingFetch })
    expect(
      (await call({ url: 'https://api.partner.test/orders/{{order_number}}' }, { order_number: '9' }, {}, env)).result
        .status,
    ).toBe('success')
    expect(sent).toEqual([
      { url: 'https://[2001:db8::7]/orders/9', host: 'api.partner.test', tls: { serverName: 'api.partner.test' } },
    ])
  })
})

describe('network policy', () => {
  test('allow-list entries: host (any port), host:port, *.domain (subdomains only), bracketed IPv6', () => {
    const allowed = (url: string, hosts: string[] | null) => hostAllowed(new URL(url), hosts)
    expect(allowed('https://anything.test/x', null)).toBe(true)
    expect(allowed('https://anything.test/x', [])).toBe(false)
    expect(allowed('https://API.example.com:8443/x', ['api.example.com'])).toBe(true)
    expect(allowed('https://api.example.com/x', ['api.example.com:8443'])).toBe(false)
    expect(allowed('https://api.example.com/x', ['api.example.com:443'])).toBe(true)
    expect(allowed('https://a.b.example.org/x', ['*.example.org'])).toBe(true)
    expect(allowed('https://example.org/x', ['*.example.org'])).toBe(false)
    expect(allowed('https://badexample.org/x', ['*.example.org'])).toBe(false)
    expect(allowed('https://api.example.com./x', ['api.example.com'])).toBe(true)
    expect(allowed('https://a.example.org./x', ['*.example.org'])).toBe(true)
    expect(allowed('http://[::1]:9000/x', ['[::1]:9000'])).toBe(true)
    expect(allowed('http://[::1]:9001/x', ['[::1]:9000'])).toBe(false)
  })

  test('the appliance is its listen address and port, its public URL, and with a wildcard or named listen any local address on that port', () => {
    const appliance = { listenHost: '127.0.0.1', listenPort: 8000, publicUrl: 'https://voice.example.com' }
    const targets = (url: string, resolved: string[] = [], address = appliance) =>
      targetsAppliance(new URL(url), resolved, address)
    expect(targets('http://127.0.0.1:8000/api/v1/tools')).toBe(true)
    expect(targets('http://localhost:8000/')).toBe(true)
    // A name written with its root dot is the same name, on the allow-list too.
    expect(targets('http://localhost.:8000/')).toBe(true)
    expect(targets('http://LOCALHOST.:8000/')).toBe(true)
    expect(targets('http://intranet.test:8000/', ['127.0.0.1'])).toBe(true)
    expect(targets('https://voice.example.com/api')).toBe(true)
    expect(targets('http://127.0.0.1:8001/')).toBe(false)
    expect(targets('http://127.0.0.2:8000/')).toBe(false)
    expect(targets('http://0.0.0.0:8000/')).toBe(true)
    expect(targets('http://[::ffff:127.0.0.1]:8000/')).toBe(true)
    expect(targets('http://intranet.test:8000/', ['10.0.0.9', '::ffff:127.0.0.1'])).toBe(true)
    expect(targets('http://intranet.test:8001/', ['127.0.0.1'])).toBe(false)
    const wildcard = { ...appliance, listenHost: '0.0.0.0' }
    expect(targets('http://127.0.0.2:8000/', [], wildcard)).toBe(true)
    expect(targets('http://[::1]:8000/', [], wildcard)).toBe(true)
    expect(targets('http://10.255.255.254:8000/', [], wildcard)).toBe(false)
    // Listening on a name (`--http localhost:8000`): whatever it resolved to, every loopback and local address counts.
    const named = { ...appliance, listenHost: 'localhost' }
    for (const url of [
      'http://127.0.0.1:8000/',
      'http://[::1]:8000/',
      'http://[::ffff:127.0.0.1]:8000/',
      'http://localhost:8000/',
    ]) {
      expect(targets(url, [], named)).toBe(true)
    }
    expect(targets('http://intranet.test:8000/', ['127.0.0.1'], named)).toBe(true)
    expect(targets('http://127.0.0.1:8001/', [], named)).toBe(false)
  })
})
