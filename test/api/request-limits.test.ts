import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startHttpTestApp, type HttpTestApp } from '../support/http-app'

// What one request may carry. Also run against the compiled binary (test/binary-http.test.ts).

let t: HttpTestApp
beforeAll(async () => { t = await startHttpTestApp() })
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
    if (types.includes('string') && schema.const === undefined && schema.enum === undefined) found.push({ where, schema })
    for (const key of ['anyOf', 'oneOf', 'allOf']) for (const branch of schema[key] ?? []) visit(branch, where, seen)
    for (const [name, property] of Object.entries(schema.properties ?? {})) visit(property as Schema, `${where}.${name}`, seen)
    if (schema.items) visit(schema.items, `${where}[]`, seen)
    if (typeof schema.additionalProperties === 'object') visit(schema.additionalProperties, `${where}{}`, seen)
  }
  for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const parameter of operation.parameters ?? []) visit(parameter.schema ?? {}, `${method.toUpperCase()} ${path} ${parameter.in} ${parameter.name}`, new Set())
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
    expect(response.body.detail).toEqual([expect.objectContaining({ type: 'string_too_long', loc: ['body', 'file_name'], ctx: { max_length: 255 } })])
  })

  test('a file name of 255 characters ending in .csv is still fine', async () => {
    const response = await t.request('POST', '/api/v1/s3/presigned-upload-url', { body: { file_name: `${'a'.repeat(251)}.csv`, file_size: 10 } })
    expect(response.status).toBe(200)
  })
})
