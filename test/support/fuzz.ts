/**
 * Requests generated from our own OpenAPI document (every operation, so new routes are fuzzed without a change here)
 * and the checks every answer must pass. test/api/fuzz.test.ts runs a fixed number of cases in process;
 * scripts/fuzz.ts runs as many as asked against the compiled binary.
 */
import fc from 'fast-check'
import type { DatabaseFingerprint } from '../../src/db/fingerprint'
import { createAgent } from './agents'
import type { HttpClient } from './http-app'
import { CONFIGS_PATH, VALID_CONFIGS } from './telephony'

type Schema = Record<string, any>
type Operation = { method: string; path: string; operation: Schema }
export type OpenApiDocument = {
  paths: Record<string, Record<string, Schema>>
  components: { schemas: Record<string, Schema>; responses?: Record<string, Schema> }
}

export type KeyChoice = 'admin' | 'trigger' | 'none' | 'unknown'

export type FuzzRequest = {
  operation: string
  method: string
  /** Path and query, URL-encoded. */
  url: string
  key: KeyChoice
  contentType?: string
  body?: string
}

export type FuzzAnswer = { status: number; text: string; contentType: string | null }

/**
 * Path parameter values by parameter name: `known` name something that exists (the rest are made up), `spared` are
 * never sent (the fuzzer's own API keys: archiving them would turn every later request into a 401).
 */
export type Fixtures = { known: Record<string, (string | number)[]>; spared: Record<string, (string | number)[]> }

const HTTP_METHODS = ['get', 'put', 'post', 'patch', 'delete']
const LONG = 100_000

export function operationsOf(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, operation]) => ({ method, path, operation })),
  )
}

const resolve = (doc: OpenApiDocument, schema: Schema | undefined): Schema => {
  let resolved = schema ?? {}
  while (typeof resolved.$ref === 'string') {
    const [, section, name] = resolved.$ref.match(/^#\/components\/(schemas|responses)\/(.+)$/) ?? []
    resolved = (doc.components as Record<string, Record<string, Schema>>)[section]?.[name] ?? {}
  }
  return resolved
}

/** Strings that break things: empty, huge, unicode, control characters, injections, traversal, numbers as text. */
const nastyString = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '../../etc/passwd',
    "1' OR '1'='1",
    '{{x}}',
    '%s%n',
    '🎉'.repeat(50),
    '\u202e\ufeff',
    '-1',
    '0',
    '1e309',
    'NaN',
    'true',
    'null',
    '[]',
    '{}',
    'Local/s@from-internal',
  ),
  fc.constantFrom('x'.repeat(LONG), 'é'.repeat(LONG), `${'a'.repeat(LONG)}.csv`),
)

const nastyNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(
    -1,
    0,
    0.5,
    -0.5,
    2 ** 31,
    2 ** 53,
    -(2 ** 53),
    1e20,
    -1e20,
    1.7976931348623157e308,
    Number.MIN_VALUE,
  ),
)

const deeplyNested = (depth: number, open: string, close: string) => `${open.repeat(depth)}${close.repeat(depth)}`

/** Any JSON value, wrong for most fields: the leaf a well-shaped body gets instead of a valid one. */
const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  nastyString,
  nastyNumber,
  fc.constantFrom(null, true, false, [], {}),
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 40, max: 1200 }).map((depth) => JSON.parse(deeplyNested(depth, '{"a":', '}').replace(/:}/, ':1}'))),
)

/** A value for `schema`: valid-ish, but with `junkRate` of the leaves replaced by junk. */
function valueFor(doc: OpenApiDocument, input: Schema | undefined, junkRate: number, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(doc, input)
  const valid = validValueFor(doc, schema, junkRate, depth)
  return junkRate === 0
    ? valid
    : fc.oneof(
        { arbitrary: valid, weight: Math.round((1 - junkRate) * 100) },
        { arbitrary: junkValue, weight: Math.round(junkRate * 100) },
      )
}

function validValueFor(doc: OpenApiDocument, schema: Schema, junkRate: number, depth: number): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
  const branches = schema.anyOf ?? schema.oneOf
  if (Array.isArray(branches))
    return fc.oneof(...branches.map((branch: Schema) => valueFor(doc, branch, junkRate, depth + 1)))
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  if (depth > 6) return fc.constant(null)
  switch (type) {
    case 'string':
      if (schema.format === 'uuid') return fc.uuid()
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((date) => date.toISOString())
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 20, 40) })
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -10, max: schema.maximum ?? 1000 })
    case 'number':
      return fc.double({ min: schema.minimum ?? -10, max: schema.maximum ?? 1000, noNaN: true })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array':
      return fc.array(valueFor(doc, schema.items, junkRate, depth + 1), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 3, 3),
      })
    case 'object': {
      const properties = Object.entries<Schema>(schema.properties ?? {})
      if (properties.length === 0) return fc.dictionary(fc.string({ maxLength: 8 }), junkValue, { maxKeys: 3 })
      const required = new Set<string>(schema.required ?? [])
      return fc.record(
        Object.fromEntries(properties.map(([name, property]) => [name, valueFor(doc, property, junkRate, depth + 1)])),
        { requiredKeys: properties.map(([name]) => name).filter((name) => required.has(name)) },
      )
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

/**
 * Long values in a URL stop at 500 characters (up to 6 kB encoded) and a query at 4 kB: Bun's HTTP server refuses
 * a request line past 16 kB itself, with a 431 and an empty body, before the app sees it.
 */
const forUrl = (value: string) => value.slice(0, 500)
const MAX_QUERY = 4000

const asText = (value: unknown) => (typeof value === 'string' ? value : (JSON.stringify(value) ?? ''))

function pathValue(doc: OpenApiDocument, parameter: Schema, fixtures: Fixtures): fc.Arbitrary<string> {
  const known = fixtures.known[parameter.name] ?? []
  const spared = new Set((fixtures.spared[parameter.name] ?? []).map(String))
  const made = fc.oneof(
    valueFor(doc, parameter.schema, 0).map(asText),
    nastyString.map(forUrl),
    fc.constantFrom('0', '-1', '+1', '1.0', '1e0', '0x1', ' 1', '99999999999999999999', '-99999999999999999999', '%00'),
  )
  return (known.length > 0 ? fc.oneof(fc.constantFrom(...known.map(String)), made) : made)
    .filter((value) => !spared.has(value.trim()) && !spared.has(String(Number(value))))
    .map((value) => (value === '%00' ? value : encodeURIComponent(value) || '%20'))
}

function queryPart(doc: OpenApiDocument, parameters: Schema[]): fc.Arbitrary<string> {
  const values = parameters.map((parameter) =>
    fc.option(
      fc
        .oneof(valueFor(doc, parameter.schema, 0).map(asText), nastyString.map(forUrl))
        .map((value) => [parameter.name, value] as const),
      { freq: 3 },
    ),
  )
  const unknown = fc.option(
    fc.tuple(
      fc.constantFrom('zzz', 'page[]', '__proto__', 'limit'),
      nastyString.map((value) => value.slice(0, 100)),
    ),
    { freq: 4 },
  )
  return fc.tuple(fc.tuple(...values), unknown).map(([pairs, extra]) => {
    const present = [...pairs, extra].filter((pair): pair is readonly [string, string] => pair !== null)
    const encoded = present.map(([name, value]) => new URLSearchParams([[name, value]]).toString())
    while (encoded.join('&').length > MAX_QUERY) encoded.pop()
    return encoded.length === 0 ? '' : `?${encoded.join('&')}`
  })
}

/** A body: well shaped with junk leaves, random JSON, deep nesting, broken JSON, or another content type. */
function bodyPart(doc: OpenApiDocument, operation: Schema): fc.Arbitrary<{ contentType?: string; body?: string }> {
  const schema = operation.requestBody?.content?.['application/json']?.schema
  const json = (value: fc.Arbitrary<unknown>) =>
    value.map((body) => ({ contentType: 'application/json', body: JSON.stringify(body) ?? 'null' }))
  return fc.oneof(
    { arbitrary: json(valueFor(doc, schema, 0.05)), weight: 3 },
    { arbitrary: json(valueFor(doc, schema, 0.4)), weight: 4 },
    { arbitrary: json(fc.jsonValue({ maxDepth: 4 })), weight: 1 },
    {
      arbitrary: fc
        .integer({ min: 100, max: 5000 })
        .map((depth) => ({ contentType: 'application/json', body: deeplyNested(depth, '[', ']') })),
      weight: 1,
    },
    {
      arbitrary: fc
        .constantFrom(
          '',
          '{',
          '{"a":}',
          '[1,]',
          'nul',
          '{"a":1}garbage',
          '\u0000',
          '{"__proto__":{"x":1}}',
          '"\\ud800"',
        )
        .map((body) => ({ contentType: 'application/json', body })),
      weight: 1,
    },
    {
      arbitrary: fc
        .tuple(
          fc.constantFrom(
            'text/plain',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
            'text/csv',
            'application/xml',
            'application/json; charset=latin1',
          ),
          fc.oneof(
            nastyString.map((value) => value.slice(0, 1000)),
            json(valueFor(doc, schema, 0)).map((part) => part.body!),
            fc.constant('a=1&b=%ZZ'),
          ),
        )
        .map(([contentType, body]) => ({ contentType, body })),
      weight: 1,
    },
    { arbitrary: fc.constant({}), weight: 1 },
  )
}

/** One request to one of the document's operations (sometimes with a method it does not take). */
export function requestArbitrary(doc: OpenApiDocument, fixtures: Fixtures): fc.Arbitrary<FuzzRequest> {
  const operations = operationsOf(doc)
  const keys = fc.constantFrom<KeyChoice>('admin', 'admin', 'admin', 'trigger', 'none', 'unknown')
  return fc.oneof(
    ...operations.map(({ method, path, operation }) => {
      const parameters: Schema[] = (operation.parameters ?? []).map((parameter: Schema) => resolve(doc, parameter))
      const pathParameters = parameters.filter((parameter) => parameter.in === 'path')
      const queryParameters = parameters.filter((parameter) => parameter.in === 'query')
      const otherMethods = HTTP_METHODS.filter((other) => !(other in doc.paths[path]))
      const methods =
        otherMethods.length > 0
          ? fc.oneof(
              { arbitrary: fc.constant(method), weight: 9 },
              { arbitrary: fc.constantFrom(...otherMethods), weight: 1 },
            )
          : fc.constant(method)
      return fc
        .record({
          method: methods,
          pathValues: fc.tuple(...pathParameters.map((parameter) => pathValue(doc, parameter, fixtures))),
          query: queryPart(doc, queryParameters),
          body:
            method === 'get' || method === 'delete'
              ? fc.oneof({ arbitrary: fc.constant({}), weight: 9 }, { arbitrary: bodyPart(doc, operation), weight: 1 })
              : bodyPart(doc, operation),
          key: keys,
        })
        .map(({ method: sent, pathValues, query, body, key }): FuzzRequest => {
          let index = 0
          const filled = path.replace(/\{[^}]+\}/g, () => pathValues[index++])
          // fetch sends no body with a GET.
          return {
            operation: `${method.toUpperCase()} ${path}`,
            method: sent.toUpperCase(),
            url: filled + query,
            key,
            ...(sent === 'get' ? {} : body),
          }
        })
    }),
  )
}

/** Whether `value` fits `schema` (the subset of JSON Schema our document uses). */
export function fitsSchema(doc: OpenApiDocument, input: Schema | undefined, value: unknown): boolean {
  const schema = resolve(doc, input)
  if ('const' in schema && value !== schema.const) return false
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) return false
  const branches = schema.anyOf ?? schema.oneOf
  if (Array.isArray(branches) && !branches.some((branch: Schema) => fitsSchema(doc, branch, value))) return false
  const types: string[] = schema.type === undefined ? [] : [schema.type].flat()
  if (types.length > 0 && !types.some((type) => fitsType(type, value))) return false
  if (Array.isArray(value) && schema.items) return value.every((item) => fitsSchema(doc, schema.items, item))
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const object = value as Record<string, unknown>
    if (!(schema.required ?? []).every((name: string) => name in object)) return false
    return Object.entries<Schema>(schema.properties ?? {}).every(
      ([name, property]) => !(name in object) || fitsSchema(doc, property, object[name]),
    )
  }
  return true
}

function fitsType(type: string, value: unknown): boolean {
  switch (type) {
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value)
    case 'array':
      return Array.isArray(value)
    case 'integer':
      return Number.isInteger(value)
    case 'null':
      return value === null
    default:
      return typeof value === type
  }
}

const VALIDATION_ITEM: Schema = {
  type: 'object',
  required: ['type', 'loc', 'msg'],
  properties: {
    type: { type: 'string' },
    msg: { type: 'string' },
    loc: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
  },
}
/** What an error answers when its status is not documented for the operation: a message, or 422 items. */
const GENERIC_ERROR: Schema = {
  type: 'object',
  required: ['detail'],
  properties: { detail: { anyOf: [{ type: 'string' }, { type: 'array', items: VALIDATION_ITEM }] } },
}

/** What is wrong with an answer: a server error, a body that is not JSON, an error shape that is not documented. */
export function answerProblems(doc: OpenApiDocument, request: FuzzRequest, answer: FuzzAnswer): string[] {
  const [method, path] = request.operation.split(' ')
  const documented =
    request.method === method ? doc.paths[path][method.toLowerCase()].responses?.[String(answer.status)] : undefined
  const response = documented === undefined ? undefined : resolve(doc, documented)
  // A documented 5xx is an honest answer (502: a provider could not be reached); any other one is a bug.
  if (answer.status >= 500 && response === undefined) return [`status ${answer.status}`]
  const nonJsonContent = Object.keys(response?.content ?? {}).some((type) => !type.includes('json'))
  if (answer.status < 300 && nonJsonContent) return []
  let body: unknown
  try {
    body = JSON.parse(answer.text)
  } catch {
    return [`status ${answer.status} answered with non-JSON (${answer.contentType}): ${answer.text.slice(0, 80)}`]
  }
  if (!answer.contentType?.startsWith('application/json'))
    return [`status ${answer.status} with content type ${answer.contentType}`]
  if (answer.status < 400) return []
  const detail = (body as { detail?: unknown })?.detail
  const itemsFit = !Array.isArray(detail) || detail.every((item) => fitsSchema(doc, VALIDATION_ITEM, item))
  const schema = response?.content?.['application/json']?.schema ?? GENERIC_ERROR
  if (detail === undefined || !itemsFit || !fitsSchema(doc, schema, body)) {
    return [`status ${answer.status} body is not the documented error shape: ${answer.text.slice(0, 160)}`]
  }
  return []
}

/** No table may change on a 4xx. */
export function writtenOnError(before: DatabaseFingerprint, after: DatabaseFingerprint): string[] {
  const changed = Object.keys(after.rows).flatMap((table) => {
    if (after.rows[table] !== before.rows[table]) return [`${table} ${before.rows[table]} → ${after.rows[table]} rows`]
    return after.digests[table] === before.digests[table] ? [] : [`${table} rows updated`]
  })
  return changed.length > 0 ? [`written on an error: ${changed.join(', ')}`] : []
}

export const describeRequest = (request: FuzzRequest) => {
  const body =
    request.body === undefined
      ? ''
      : ` ${request.contentType ?? ''} ${request.body.length > 200 ? `${request.body.slice(0, 200)}… (${request.body.length} chars)` : request.body}`
  const url = request.url.length > 200 ? `${request.url.slice(0, 200)}… (${request.url.length} chars)` : request.url
  return `${request.method} ${url} [${request.key} key]${body}`
}

export type Send = (request: FuzzRequest) => Promise<FuzzAnswer>

/** Sends generated requests through a test client, with the key each one chose. */
export const sendThrough =
  (client: HttpClient, keys: FuzzSetup['keys']): Send =>
  async (request) => {
    const answer = await client.request(request.method, request.url, {
      key: keys[request.key],
      rawBody: request.body,
      headers: request.contentType ? { 'content-type': request.contentType } : {},
    })
    return { status: answer.status, text: answer.text, contentType: answer.headers.get('content-type') }
  }

/** Sends one request and lists what is wrong with its answer, and with the database after an error. */
export async function fuzzCase(
  doc: OpenApiDocument,
  send: Send,
  fingerprint: () => DatabaseFingerprint,
  request: FuzzRequest,
): Promise<string[]> {
  const before = fingerprint()
  const answer = await send(request)
  const problems = answerProblems(doc, request, answer)
  if (answer.status >= 400) problems.push(...(await writtenByError(send, fingerprint, request, before)))
  return problems
}

/**
 * What an error answer wrote. A write seen during it may still be the server's own (a configuration's connection state
 * after an earlier request changed it) landing then: the request is sent again, up to three times, each once the
 * database has been quiet for 300 ms, and it counts only when every try wrote.
 */
async function writtenByError(
  send: Send,
  fingerprint: () => DatabaseFingerprint,
  request: FuzzRequest,
  before: DatabaseFingerprint,
): Promise<string[]> {
  let written = writtenOnError(before, fingerprint())
  for (let retry = 0; retry < 3 && written.length > 0; retry++) {
    const quiet = await quietFingerprint(fingerprint)
    const again = await send(request)
    written = again.status >= 400 ? writtenOnError(quiet, fingerprint()) : []
  }
  return written
}

/** The fingerprint once it has not changed for 300 ms (at most 5 s of waiting). */
async function quietFingerprint(fingerprint: () => DatabaseFingerprint): Promise<DatabaseFingerprint> {
  let quiet = fingerprint()
  let quietFor = 0
  for (let waited = 0; waited < 5000 && quietFor < 300; waited += 50) {
    await Bun.sleep(50)
    const now = fingerprint()
    quietFor = writtenOnError(quiet, now).length === 0 ? quietFor + 50 : 0
    quiet = now
  }
  return quiet
}

export type FuzzSetup = { fixtures: Fixtures; keys: Record<KeyChoice, string | null> }

/**
 * Something for the generated ids to find (an agent with an API trigger, an ARI configuration), a trigger-scoped key,
 * and each key used once (its first use records last_used_at, a write no error may be blamed for).
 */
export async function seedFuzzFixtures(client: HttpClient, adminKey: string): Promise<FuzzSetup> {
  const agent = await createAgent(client, 'Fuzzed agent')
  const configuration = await client.request('POST', CONFIGS_PATH, {
    body: { name: 'Fuzzed PBX', is_default_outbound: true, config: VALID_CONFIGS.ari.config },
  })
  if (configuration.status !== 200)
    throw new Error(`create configuration: ${configuration.status} ${configuration.text}`)
  const trigger = (
    await client.request('POST', '/api/v1/user/api-keys', { body: { name: 'fuzz trigger', scope: 'trigger' } })
  ).body
  for (const key of [adminKey, trigger.api_key]) await client.request('GET', '/api/v1/workflow/fetch', { key })
  const ownKeys = (await client.request('GET', '/api/v1/user/api-keys')).body.map((key: { id: number }) => key.id)
  return {
    fixtures: {
      known: {
        workflow_id: [agent.id],
        workflow_uuid: [agent.workflow_uuid],
        uuid: [agent.workflow_uuid],
        config_id: [configuration.body.id],
      },
      spared: { api_key_id: ownKeys },
    },
    keys: { admin: adminKey, trigger: trigger.api_key, none: null, unknown: `rb_${'z'.repeat(43)}` },
  }
}
