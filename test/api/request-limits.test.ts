import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'
import { rawHttp } from '../support/raw-http'

// What one request may carry. Also run against the compiled binary (test/binary-http.test.ts).

let t: HttpTestApp
beforeAll(async () => {
  t = await startHttpTestApp()
})
afterAll(() => t.close())

type Schema = Record<string, any>

/** Every string schema a request can carry (parameters and bodies), with where it is, `$ref`s followed. */
function requestStrings(document: Schema): { where: string; schema: Schema }[] {
  const components: Record<string, Schema> = document.components?.schemas ?? {}
  const found: { where: string; schema: Schema }[] = []
  const visit = (schema: Schema, where: string, seen: Set<string>) => {
    if (schema.$ref) {
      const name = String(schema.$ref).split('/').at(-1)!
      if (seen.has(name)) return
      visit(components[name], where, new Set([...seen, name]))
      return
    }
    const types = [schema.type].flat()
    if (types.includes('string') && schema.const === undefined && schema.enum === undefined)
      found.push({ where, schema })
    for (const key of ['anyOf', 'oneOf', 'allOf']) for (const branch of schema[key] ?? []) visit(branch, where, seen)
    for (const [name, property] of Object.entries(schema.properties ?? {}))
      visit(property as Schema, `${where}.${name}`, seen)
    if (schema.items) visit(schema.items, `${where}[]`, seen)
    if (typeof schema.additionalProperties === 'object') visit(schema.additionalProperties, `${where}{}`, seen)
  }
  for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const parameter of operation.parameters ?? [])
        visit(parameter.schema ?? {}, `${method.toUpperCase()} ${path} ${parameter.in} ${parameter.name}`, new Set())
      for (const content of Object.values(operation.requestBody?.content ?? {}) as Schema[]) {
        visit(content.schema ?? {}, `${method.toUpperCase()} ${path} body`, new Set())
      }
    }
  }
  return found
}

describe('request strings are bounded', () => {
  test('every string a request may carry has a maxLength, and no pattern starts with a wildcard', async () => {
    const document = (await t.request('GET', '/api/v1/openapi.json')).body
    const strings = requestStrings(document)
    expect(strings.length).toBeGreaterThan(100)
    expect(strings.filter(({ schema }) => typeof schema.maxLength !== 'number').map(({ where }) => where)).toEqual([])
    // An unanchored leading `.*` is tried from every position: quadratic in the input's length.
    expect(strings.filter(({ schema }) => /^\.[*+]/.test(schema.pattern ?? '')).map(({ where }) => where)).toEqual([])
  })

  test('a 100,000-character file name is refused at once, before any pattern runs over it', async () => {
    const response = await t.request('POST', '/api/v1/s3/presigned-upload-url', {
      body: { file_name: `${'a'.repeat(100_000)}.csv`, file_size: 10 },
    })
    expect(response.status).toBe(422)
    expect(response.body.detail).toEqual([
      expect.objectContaining({ type: 'string_too_long', loc: ['body', 'file_name'], ctx: { max_length: 255 } }),
    ])
  })

  test('a file name of 255 characters ending in .csv is still fine', async () => {
    const response = await t.request('POST', '/api/v1/s3/presigned-upload-url', {
      body: { file_name: `${'a'.repeat(251)}.csv`, file_size: 10 },
    })
    expect(response.status).toBe(200)
  })
})

const HUNDRED_MB = 100 * 1024 * 1024

/** A request head announcing a body that never comes: only a server that answers without reading it answers at all. */
const headOnly = (method: string, path: string, headers: Record<string, string>) =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`

describe('bodies are read only after authentication, and at most 1 MiB of them', () => {
  test('no key and a 100 MB body announced: 401 at once, nothing read', async () => {
    const response = await rawHttp(
      await t.httpUrl(),
      headOnly('POST', '/api/v1/workflow/create/definition', {
        'content-type': 'application/json',
        'content-length': String(HUNDRED_MB),
      }),
    )
    expect(response.status).toBe(401)
    expect(JSON.parse(response.body)).toEqual({ detail: expect.any(String) })
  })

  test('a wrong key, the same: 401 at once', async () => {
    const response = await rawHttp(
      await t.httpUrl(),
      headOnly('POST', '/api/v1/user/api-keys', {
        'x-api-key': 'rb_wrong',
        'content-type': 'application/json',
        'content-length': String(HUNDRED_MB),
      }),
    )
    expect(response.status).toBe(401)
  })

  test('a valid key and a body announced above 1 MiB: 413 {detail} at once', async () => {
    const response = await rawHttp(
      await t.httpUrl(),
      headOnly('POST', '/api/v1/user/api-keys', {
        'x-api-key': t.adminKey,
        'content-type': 'application/json',
        'content-length': String(1024 * 1024 + 1),
      }),
    )
    expect(response.status).toBe(413)
    expect(JSON.parse(response.body)).toEqual({ detail: expect.stringContaining('1048576 bytes') })
  })

  test('a public route that reads its body (run trigger): 413 at once for a body announced above 1 MiB', async () => {
    const response = await rawHttp(
      await t.httpUrl(),
      headOnly('POST', '/api/v1/public/agent/some-trigger', {
        'content-type': 'application/json',
        'content-length': String(HUNDRED_MB),
      }),
    )
    expect(response.status).toBe(413)
  })

  test('a chunked body is cut off at 1 MiB: 413, and nothing is created', async () => {
    const chunk = `{"name":"${'x'.repeat(2 * 1024 * 1024)}"}`
    const head = headOnly('POST', '/api/v1/user/api-keys', {
      'x-api-key': t.adminKey,
      'content-type': 'application/json',
      'transfer-encoding': 'chunked',
    })
    const response = await rawHttp(await t.httpUrl(), head, `${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`)
    expect(response.status).toBe(413)
    expect((await t.request('GET', '/api/v1/user/api-keys')).body).toHaveLength(1)
  })

  test('a body just under 1 MiB is read as usual (and judged by its schema)', async () => {
    const response = await t.request('POST', '/api/v1/user/api-keys', {
      body: { name: 'n', padding: 'x'.repeat(1024 * 1024 - 100) },
    })
    expect(response.status).toBe(200)
  })
})

/**
 * The carriers' webhooks take their bodies raw (forms, JSON, signed byte for byte), so the document has no body schema
 * for the check above to read: they are bounded by size instead, every one of them, found in the document.
 */
describe('carrier webhooks: raw bodies of at most 64 KiB', () => {
  const SAMPLE_PARAMETERS: Record<string, string> = { provider: 'twilio', callback: 'status-callback', run_id: '1' }
  const webhookPosts = async () => {
    const document = (await t.request('GET', '/api/v1/openapi.json')).body
    return Object.entries(document.paths as Record<string, Record<string, Schema>>)
      .filter(([path, operations]) => path.startsWith('/api/v1/telephony/') && operations.post?.security?.length === 0)
      .map(([path, operations]) => ({
        path: path.replace(/\{(\w+)\}/g, (_, name: string) => SAMPLE_PARAMETERS[name]),
        operation: operations.post,
      }))
  }

  test('none declares a body schema, and each refuses a body announced above 64 KiB with 413, unread', async () => {
    const posts = await webhookPosts()
    expect(posts.length).toBeGreaterThanOrEqual(4)
    expect(posts.filter(({ operation }) => operation.requestBody !== undefined).map(({ path }) => path)).toEqual([])
    for (const { path } of posts) {
      const response = await rawHttp(
        await t.httpUrl(),
        headOnly('POST', path, {
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': String(64 * 1024 + 1),
        }),
      )
      expect(`${path} ${response.status}`).toBe(`${path} 413`)
    }
  })

  test('a chunked body over 64 KiB is cut off: 413', async () => {
    const chunk = `CallSid=CA1&Junk=${'x'.repeat(70_000)}`
    const head = headOnly('POST', '/api/v1/telephony/twilio/status-callback/1', {
      'content-type': 'application/x-www-form-urlencoded',
      'transfer-encoding': 'chunked',
    })
    const response = await rawHttp(await t.httpUrl(), head, `${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`)
    expect(response.status).toBe(413)
  })
})

/** `{"a": {"a": … 1}}` with `levels` objects. */
const nested = (levels: number): unknown => (levels === 0 ? 1 : { a: nested(levels - 1) })

describe('free-form objects nest at most 32 levels (the body is level 1)', () => {
  test('initial_context 1,100 levels deep on a run start: 422 naming where, not a 500 from SQLite', async () => {
    const trigger = t.newOrg('deep', 'trigger')
    const response = await t.request('POST', '/api/v1/public/agent/workflow/00000000-0000-4000-8000-000000000000', {
      key: trigger.key,
      body: { phone_number: '+14155550100', initial_context: nested(1100) },
    })
    expect(response.status).toBe(422)
    expect(response.body.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'initial_context', ...Array(31).fill('a')],
        msg: 'Value error, JSON may nest at most 32 levels deep',
        ctx: { max_depth: 32 },
      },
    ])
  })

  test('a workflow definition or an array nested too deep: 422, nothing saved', async () => {
    const deepArray = JSON.parse(`${'['.repeat(40)}${']'.repeat(40)}`)
    for (const workflow_definition of [nested(40), { nodes: deepArray, edges: [] }]) {
      const response = await t.request('POST', '/api/v1/workflow/create/definition', {
        body: { name: 'Deep', workflow_definition },
      })
      expect(response.status).toBe(422)
      expect(response.body.detail[0].loc.slice(0, 2)).toEqual(['body', 'workflow_definition'])
    }
    const inArray = await t.request('POST', '/api/v1/workflow/create/definition', {
      body: { name: 'Deep', workflow_definition: { nodes: deepArray, edges: [] } },
    })
    expect(inArray.body.detail[0].loc).toEqual(['body', 'workflow_definition', 'nodes', ...Array(30).fill(0)])
    expect((await t.request('GET', '/api/v1/workflow/count')).body.total).toBe(0)
  })

  test('32 levels are fine', async () => {
    const response = await t.request('POST', '/api/v1/user/api-keys', {
      body: { name: 'Deep enough', extra: nested(31) },
    })
    expect(response.status).toBe(200)
  })
})
