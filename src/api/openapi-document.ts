import { toOpenAPISchema } from '@elysiajs/openapi'
import { Elysia, type AnyElysia } from 'elysia'
import { NESTED_SCHEMA_NAMES, OPERATION_NAMES, type OperationNames } from './openapi-names'

/*
 * The OpenAPI document as client generators like it: every request body and response is a named component used by
 * `$ref`, structurally identical shapes are defined once, and operation ids are identifiers built the way the
 * reference platform builds them. Elysia describes each route inline; this rewrites that description in one pass.
 */

type Schema = Record<string, any>
type Operation = Record<string, any>
export type OpenApiDocument = {
  openapi: string
  info: Record<string, unknown>
  paths: Record<string, Record<string, Operation>>
  components?: { schemas?: Record<string, Schema>; [key: string]: unknown }
  [key: string]: unknown
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** The reference's scheme: the operation's name, then the path and the method, every non-word character as `_`. */
export function operationId(name: string, method: string, path: string): string {
  return `${name}${path}_${method.toLowerCase()}`.replace(/\W/g, '_').toLowerCase()
}

const VERBS: Record<string, string> = { get: 'get', post: 'create', put: 'update', patch: 'update', delete: 'delete' }

/** Names an operation missing from the table: a verb for the method and the path's fixed words. */
export function defaultOperationName(method: string, path: string): string {
  const words = path
    .replace(/^\/api\/v\d+/, '')
    .split('/')
    .filter((segment) => segment && !segment.startsWith('{'))
  return [VERBS[method.toLowerCase()] ?? method.toLowerCase(), ...words].join('_').replace(/\W/g, '_').toLowerCase()
}

export function operationNames(method: string, path: string): OperationNames {
  return OPERATION_NAMES[`${method.toUpperCase()} ${path}`] ?? { name: defaultOperationName(method, path) }
}

const pascalCase = (snake: string) =>
  snake
    .split('_')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('')

const isObject = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The same JSON whatever the key order: the identity of a shape. */
function shapeKey(schema: unknown): string {
  const sorted = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(sorted)
      : isObject(value)
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((key) => [key, sorted(value[key])]),
          )
        : value
  return JSON.stringify(sorted(schema))
}

const COERCED_FORMATS = new Set(['integer', 'numeric', 'number', 'boolean'])

/**
 * Elysia widens numbers and booleans to `string (format: integer) | integer` so that path and query text can be
 * coerced; JSON bodies and responses carry the real type, and a query parameter's type is its parsed one. Records
 * come out as `patternProperties: {"^(.*)$": …}`, which most generators ignore: `additionalProperties` says the same.
 * `additionalProperties: false` goes: Elysia adds it to a shared schema object when it first compiles a response
 * cleaner, so it would come and go with what the process has served (bodies ignore unknown properties anyway).
 */
function simplify(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(simplify)
  if (!isObject(value)) return value
  const { anyOf } = value
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const coerced = anyOf.findIndex((branch) => branch?.type === 'string' && COERCED_FORMATS.has(branch.format))
    if (coerced >= 0 && anyOf[1 - coerced]?.type !== 'string') return simplify(anyOf[1 - coerced])
  }
  const out: Schema = {}
  for (const [key, child] of Object.entries(value)) out[key] = simplify(child)
  if (out.additionalProperties === false) delete out.additionalProperties
  const patterns = out.patternProperties
  if (
    isObject(patterns) &&
    Object.keys(patterns).length === 1 &&
    '^(.*)$' in patterns &&
    out.additionalProperties === undefined
  ) {
    const values = patterns['^(.*)$']
    delete out.patternProperties
    out.additionalProperties = Object.keys(values).length === 0 ? true : values
  }
  return out
}

/** `T | null` written as `type: [T, "null"]`: the shape is T. */
function withoutNull(schema: Schema): Schema | undefined {
  if (!Array.isArray(schema.type) || schema.type.length !== 2 || !schema.type.includes('null')) return undefined
  return { ...schema, type: schema.type.find((type: string) => type !== 'null') }
}

/** Shapes worth a name when found nested: objects, enums and unions, never a bare string or number. */
const isStructured = (schema: Schema) =>
  isObject(schema.properties) ||
  Array.isArray(schema.enum) ||
  Array.isArray(schema.anyOf) ||
  Array.isArray(schema.oneOf)

/** Ranks of a name claim: the table's names win over the shared defaults, which win over names made up from an operation. */
const Rank = { Table: 0, Shared: 1, Derived: 2 } as const
type Rank = (typeof Rank)[keyof typeof Rank]

type Shape = {
  key: string
  schema: Schema
  claims: { name: string; rank: Rank; order: number }[]
  uses: number
  name?: string
}

class ShapeRegistry {
  readonly shapes = new Map<string, Shape>()
  private order = 0

  claim(schema: Schema, names: [string | undefined, Rank][]): Shape {
    const key = shapeKey(schema)
    let shape = this.shapes.get(key)
    if (!shape) this.shapes.set(key, (shape = { key, schema, claims: [], uses: 0 }))
    shape.uses += 1
    for (const [name, rank] of names) if (name) shape.claims.push({ name, rank, order: this.order++ })
    return shape
  }

  /** Each shape takes its best claimed name that no other shape holds; the most claimed shapes choose first. */
  resolve(): Map<string, Shape> {
    const byName = new Map<string, Shape>()
    const best = (shape: Shape) => Math.min(...shape.claims.map((claim) => claim.rank))
    const first = (shape: Shape) => Math.min(...shape.claims.map((claim) => claim.order))
    const ordered = [...this.shapes.values()].sort(
      (a, b) => best(a) - best(b) || b.uses - a.uses || first(a) - first(b),
    )
    for (const shape of ordered) {
      const candidates = [...shape.claims]
        .sort((a, b) => a.rank - b.rank || a.order - b.order)
        .map((claim) => claim.name)
      let name = candidates.find((candidate) => !byName.has(candidate))
      for (let n = 2; !name; n++) if (!byName.has(`${candidates[0]}${n}`)) name = `${candidates[0]}${n}`
      shape.name = name
      byName.set(name, shape)
      // Other names the table gives the same shape stay available, as aliases of the one that defines it.
      for (const claim of shape.claims)
        if (claim.rank === Rank.Table && !byName.has(claim.name)) byName.set(claim.name, shape)
    }
    return byName
  }
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })

/** Follows one step of a NESTED_SCHEMA_NAMES path: `name`, `name[]` or `name(tag)`. */
function step(schema: Schema | undefined, segment: string): Schema | undefined {
  const [, property, suffix, tag] = segment.match(/^([^[(]+)(\[\]|\((.+)\))?$/) ?? []
  let child = schema?.properties?.[property]
  if (!isObject(child)) return undefined
  child = withoutNull(child) ?? child
  if (suffix === '[]') return isObject(child.items) ? child.items : undefined
  if (tag !== undefined) {
    const tagField = child.discriminator?.propertyName
    return (child.anyOf ?? child.oneOf)?.find((member: Schema) => member.properties?.[tagField]?.const === tag)
  }
  return child
}

/** Registers the nested shapes the table names inside every shape that claims a name, and inside those in turn. */
function claimNestedShapes(registry: ShapeRegistry): void {
  const pending = [...registry.shapes.values()]
  const visited = new Set<string>()
  while (pending.length > 0) {
    const shape = pending.pop()!
    for (const { name } of shape.claims) {
      if (visited.has(`${shape.key}\n${name}`)) continue
      visited.add(`${shape.key}\n${name}`)
      for (const [path, nestedName] of Object.entries(NESTED_SCHEMA_NAMES[name] ?? {})) {
        const nested = path.split('.').reduce<Schema | undefined>(step, shape.schema)
        if (nested) pending.push(registry.claim(withoutNull(nested) ?? nested, [[nestedName, Rank.Table]]))
      }
    }
  }
}

/** Replaces every nested shape that has a name by a `$ref` to it (a nullable one by `$ref | null`). */
function referenceNamedShapes(schema: unknown, shapes: Map<string, Shape>, isRoot = false): unknown {
  if (Array.isArray(schema)) return schema.map((item) => referenceNamedShapes(item, shapes))
  if (!isObject(schema)) return schema
  if (!isRoot && isStructured(schema)) {
    const named = shapes.get(shapeKey(schema))
    if (named) return ref(named.name!)
    const nonNull = withoutNull(schema)
    const namedNonNull = nonNull && shapes.get(shapeKey(nonNull))
    if (namedNonNull) return { anyOf: [ref(namedNonNull.name!), { type: 'null' }] }
  }
  const out: Schema = {}
  for (const [key, child] of Object.entries(schema)) {
    // Property maps and examples hold names and values, not schemas.
    out[key] =
      key === 'properties' && isObject(child)
        ? Object.fromEntries(
            Object.entries(child).map(([property, value]) => [property, referenceNamedShapes(value, shapes)]),
          )
        : key === 'examples' || key === 'default' || key === 'const' || key === 'enum'
          ? child
          : referenceNamedShapes(child, shapes)
  }
  return out
}

/** Puts a `$ref` where a hoisted schema was, once names are settled. */
type Placement = (byName: Map<string, Shape>) => void

/** Registers an operation's request body and responses under the names each may take. */
function claimOperationSchemas(registry: ShapeRegistry, operation: Operation, names: OperationNames): Placement[] {
  const base = pascalCase(names.name)
  const placements: Placement[] = []
  const hoist = (content: Record<string, { schema?: Schema }>, claims: [string | undefined, Rank][]) => {
    for (const media of Object.values(content ?? {})) {
      const schema = media.schema
      if (!isObject(schema) || schema.$ref) continue
      // A list is named by its items, as the reference does (`WorkflowListResponse[]`).
      const listOfObjects =
        schema.type === 'array' && isObject(schema.items) && isStructured(schema.items) && !schema.items.$ref
      const shape = registry.claim(listOfObjects ? schema.items : schema, claims)
      placements.push((byName) => {
        // The table's name for this place, even when it is an alias of the shape's first name.
        const name =
          claims.find(([claimed, rank]) => rank === Rank.Table && claimed && byName.get(claimed) === shape)?.[0] ??
          shape.name!
        media.schema = listOfObjects ? { ...schema, items: ref(name) } : ref(name)
      })
    }
  }
  if (operation.requestBody?.content)
    hoist(operation.requestBody.content, [
      [names.request, Rank.Table],
      [`${base}Request`, Rank.Derived],
    ])
  for (const [status, response] of Object.entries<Record<string, any>>(operation.responses ?? {})) {
    if (!response.content) continue
    const success = status.startsWith('2')
    hoist(
      response.content,
      success
        ? [
            [names.response, Rank.Table],
            [`${base}Response`, Rank.Derived],
          ]
        : [
            [names.errors?.[status], Rank.Table],
            [status === '422' ? 'HTTPValidationError' : 'HTTPError', Rank.Shared],
            [`${base}Error`, Rank.Derived],
            [`${base}Error${status}`, Rank.Derived],
          ],
    )
  }
  return placements
}

/**
 * Error responses repeat on almost every operation (401, 403, 404, 422): one that is the same on several operations is
 * written once under `components.responses`, named after the schema it carries.
 */
function shareErrorResponses(paths: OpenApiDocument['paths']): Record<string, Schema> {
  const groups = new Map<string, { response: Schema; uses: { responses: Schema; status: string }[] }>()
  for (const item of Object.values(paths)) {
    for (const method of HTTP_METHODS) {
      for (const [status, response] of Object.entries<Schema>(item[method]?.responses ?? {})) {
        if (status.startsWith('2') || !response.content) continue
        const key = shapeKey(response)
        if (!groups.has(key)) groups.set(key, { response, uses: [] })
        groups.get(key)!.uses.push({ responses: item[method].responses, status })
      }
    }
  }
  const shared: Record<string, Schema> = {}
  for (const { response, uses } of [...groups.values()].sort((a, b) => b.uses.length - a.uses.length)) {
    const refs = Object.values<Schema>(response.content).map((media) => media.schema?.$ref)
    const name = refs[0]?.split('/').pop()
    if (uses.length < 2 || !name || refs.some((each) => each !== refs[0]) || shared[name]) continue
    shared[name] = response
    for (const { responses, status } of uses) responses[status] = { $ref: `#/components/responses/${name}` }
  }
  return shared
}

/** Rewrites the document Elysia produced: named components, shared shapes defined once, reference-style ids. */
export function nameSchemas(source: OpenApiDocument): OpenApiDocument {
  const document = simplify(structuredClone(source)) as OpenApiDocument
  const registry = new ShapeRegistry()
  const placements: Placement[] = []
  const usedIds = new Set<string>()
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method]
      if (!operation) continue
      const names = operationNames(method, path)
      const id = operationId(names.name, method, path)
      let unique = id
      for (let n = 2; usedIds.has(unique); n++) unique = `${id}_${n}`
      usedIds.add(unique)
      operation.operationId = unique
      placements.push(...claimOperationSchemas(registry, operation, names))
    }
  }
  claimNestedShapes(registry)
  const byName = registry.resolve()
  for (const place of placements) place(byName)
  const schemas: Record<string, Schema> = { ...document.components?.schemas }
  for (const [name, shape] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    schemas[name] =
      shape.name === name ? (referenceNamedShapes(shape.schema, registry.shapes, true) as Schema) : ref(shape.name!)
  }
  const responses = {
    ...(document.components?.responses as Record<string, Schema>),
    ...shareErrorResponses(document.paths),
  }
  return { ...document, components: { ...document.components, schemas, responses } }
}

type DocumentOptions = {
  path: string
  info: Record<string, unknown>
  components?: Record<string, unknown>
  security?: unknown[]
}

/**
 * The app's routes as the generator should see them. Bodies are read by one parse hook, a function (request-body.ts),
 * which the generator skips: it would list no content type at all. That hook reads JSON, so say so.
 */
function documentedRoutes(app: AnyElysia): AnyElysia {
  type Route = { hooks: { parse?: { fn: unknown }[] } }
  const { getGlobalRoutes, getGlobalDefinitions } = app as unknown as {
    getGlobalRoutes(): Route[]
    getGlobalDefinitions(): unknown
  }
  const routes = getGlobalRoutes.call(app).map((route) => {
    const named = route.hooks.parse?.filter((hook) => typeof hook.fn === 'string') ?? []
    return { ...route, hooks: { ...route.hooks, parse: named.length > 0 ? named : [{ fn: 'application/json' }] } }
  })
  return {
    getGlobalRoutes: () => routes,
    getGlobalDefinitions: () => getGlobalDefinitions.call(app),
  } as unknown as AnyElysia
}

/** Serves the rewritten document at `options.path`, built once from every route of the app it is used in. */
export function openApiDocument(options: DocumentOptions) {
  let document: OpenApiDocument | undefined
  const plugin = new Elysia().get(
    options.path,
    () => {
      if (!document) {
        const { paths, components } = toOpenAPISchema(
          documentedRoutes(plugin),
          undefined,
          undefined,
          undefined,
          '3.1.2',
        )
        document = nameSchemas({
          openapi: '3.1.2',
          info: options.info,
          ...(options.security ? { security: options.security } : {}),
          paths: paths as OpenApiDocument['paths'],
          components: { ...options.components, schemas: components.schemas as Record<string, Schema> },
        })
      }
      return document
    },
    { detail: { hide: true } },
  )
  return plugin
}
