import type { GraphConstraints, NodeSpec, PropertySpec, RowPropertySpec } from './node-catalog'

export type { NodeSpec, PropertySpec, RowPropertySpec } from './node-catalog'
import { cloneJson, isPlainObject, plural } from '../lib/values'

/**
 * The rules a workflow definition must follow, given the node catalog. Pure (no server module, no Node or Bun API), so
 * the console's editor checks a definition as it is typed with the very rules the API applies on save.
 *
 * Workflow definitions in the graph format clients build and reload:
 * `{nodes: [{id, type, position, data}], edges: [{id, source, target, data}], viewport?}`.
 * Node `data` is checked against the node catalog: unknown node types are errors, but data keys the catalog does not
 * declare are kept and pass (clients validate those themselves; the server only needs the ones it understands).
 */

export type AgentNode = {
  id: string
  type: string
  position?: { x: number; y: number }
  data: Record<string, unknown>
  [extra: string]: unknown
}

export type EdgeData = {
  label: string
  condition: string
  transition_speech?: string
  transition_speech_type?: 'text' | 'audio'
  transition_speech_recording_id?: string
  [extra: string]: unknown
}

export type AgentEdge = {
  id: string
  source: string
  target: string
  data: EdgeData
  [extra: string]: unknown
}

export type AgentDefinition = {
  nodes: AgentNode[]
  edges: AgentEdge[]
  viewport?: { x: number; y: number; zoom: number }
  [extra: string]: unknown
}

/** One problem, in the shape of the `{detail: {is_valid: false, errors: [...]}}` body. */
export type DefinitionError = {
  kind: 'node' | 'edge' | 'workflow'
  id: string | null
  field: string | null
  message: string
}

export type DefinitionValidation = {
  /** A copy of the input as `prepareNode` left it; only a valid AgentDefinition when `errors` is empty. */
  definition: AgentDefinition
  errors: DefinitionError[]
  /** Trigger paths of the definition, in node order; installation-wide uniqueness is the caller's check. */
  triggerPaths: string[]
}

/** Edge data described like node data, so the same checks apply. */
export const EDGE_DATA_PROPERTIES: PropertySpec[] = [
  {
    name: 'label',
    type: 'string',
    display_name: 'Label',
    description: 'Name of the transition.',
    required: true,
    min_length: 1,
  },
  {
    name: 'condition',
    type: 'string',
    display_name: 'Condition',
    description: 'When to take the transition.',
    required: true,
    min_length: 1,
  },
  {
    name: 'transition_speech',
    type: 'string',
    display_name: 'Transition speech',
    description: 'Said while moving on.',
  },
  {
    name: 'transition_speech_type',
    type: 'options',
    display_name: 'Transition speech type',
    description: 'Speak text or play a recording.',
    options: [
      { value: 'text', label: 'Text' },
      { value: 'audio', label: 'Recording' },
    ],
  },
  {
    name: 'transition_speech_recording_id',
    type: 'recording_ref',
    display_name: 'Transition recording',
    description: 'Recording played while moving on.',
  },
]

type FieldError = { field: string | null; message: string }

const isNonEmptyString = (value: unknown): value is string => typeof value === 'string' && value !== ''

const isFiniteNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value)

function checkPropertyValue(spec: PropertySpec | RowPropertySpec, value: unknown, field: string): FieldError[] {
  const fail = (message: string): FieldError[] => [{ field, message: `${spec.display_name} ${message}` }]
  const allowed = spec.options?.map((option) => option.value) ?? []
  const allowedText = allowed.map((option) => JSON.stringify(option)).join(', ')
  switch (spec.type) {
    case 'string':
    case 'mention_textarea':
    case 'url':
    case 'recording_ref':
    case 'credential_ref': {
      if (typeof value !== 'string') return fail('must be a string')
      const length = [...value].length
      if (spec.min_length != null && length < spec.min_length)
        return fail(`must be at least ${plural(spec.min_length, 'character')} long`)
      if (spec.max_length != null && length > spec.max_length)
        return fail(`must be at most ${plural(spec.max_length, 'character')} long`)
      if (spec.pattern != null && !new RegExp(spec.pattern, 'u').test(value)) return fail(`must match ${spec.pattern}`)
      return []
    }
    case 'number':
      if (!isFiniteNumber(value)) return fail('must be a number')
      if (spec.min_value != null && value < spec.min_value) return fail(`must be at least ${spec.min_value}`)
      if (spec.max_value != null && value > spec.max_value) return fail(`must be at most ${spec.max_value}`)
      return []
    case 'boolean':
      return typeof value === 'boolean' ? [] : fail('must be true or false')
    case 'options':
      return allowed.includes(value as string) ? [] : fail(`must be one of ${allowedText}`)
    case 'multi_options':
      return Array.isArray(value) && value.every((item) => allowed.includes(item))
        ? []
        : fail(`must be a list of ${allowedText}`)
    case 'tool_refs':
    case 'document_refs':
      return Array.isArray(value) && value.every((item) => typeof item === 'string')
        ? []
        : fail('must be a list of strings')
    case 'json':
      return isPlainObject(value) ? [] : fail('must be a JSON object')
    case 'fixed_collection': {
      if (!Array.isArray(value)) return fail('must be a list of rows')
      const rowSpecs = 'properties' in spec ? (spec.properties ?? []) : []
      return value.flatMap((row, index) => {
        const rowField = `${field}[${index}]`
        if (!isPlainObject(row))
          return [{ field: rowField, message: `Row ${index + 1} of ${spec.display_name} must be an object` }]
        return checkProperties(rowSpecs, row, rowField)
      })
    }
  }
}

/** Checks the properties a spec list declares; keys it does not declare are left alone. null counts as absent. */
function checkProperties(
  specs: (PropertySpec | RowPropertySpec)[],
  values: Record<string, unknown>,
  prefix: string,
): FieldError[] {
  return specs.flatMap((spec) => {
    const field = `${prefix}.${spec.name}`
    const value = values[spec.name]
    if (value === undefined || value === null)
      return spec.required ? [{ field, message: `${spec.display_name} is required` }] : []
    return checkPropertyValue(spec, value, field)
  })
}

/** Instance and edge-count limits from each node type's `graph_constraints`. */
function checkGraphConstraints(
  nodes: AgentNode[],
  edges: AgentEdge[],
  nodeTypes: ReadonlyMap<string, NodeSpec>,
): DefinitionError[] {
  const errors: DefinitionError[] = []
  const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)
  const incoming = new Map<string, number>()
  const outgoing = new Map<string, number>()
  for (const edge of edges) {
    count(outgoing, edge.source)
    count(incoming, edge.target)
  }
  const instances = new Map<string, number>()
  for (const node of nodes) {
    const spec = nodeTypes.get(node.type)!
    const limits: GraphConstraints = spec.graph_constraints ?? {}
    const seen = count(instances, node.type).get(node.type)!
    const label = `${spec.display_name} node`
    const nodeError = (message: string) => errors.push({ kind: 'node', id: node.id, field: null, message })
    if (limits.max_instances != null && seen > limits.max_instances) {
      nodeError(`A workflow may have at most ${plural(limits.max_instances, label)}`)
    }
    const edgeCounts = [
      ['incoming', incoming.get(node.id) ?? 0, limits.min_incoming, limits.max_incoming],
      ['outgoing', outgoing.get(node.id) ?? 0, limits.min_outgoing, limits.max_outgoing],
    ] as const
    for (const [direction, actual, min, max] of edgeCounts) {
      if (max === 0 && actual > 0) nodeError(`${label} cannot have ${direction} edges`)
      else if (max != null && actual > max) nodeError(`${label} can have at most ${plural(max, `${direction} edge`)}`)
      if (min != null && actual < min) nodeError(`${label} needs at least ${plural(min, `${direction} edge`)}`)
    }
  }
  for (const spec of nodeTypes.values()) {
    const minimum = spec.graph_constraints?.min_instances
    if (minimum != null && (instances.get(spec.name) ?? 0) < minimum) {
      const exactly = spec.graph_constraints?.max_instances === minimum
      errors.push({
        kind: 'workflow',
        id: null,
        field: null,
        message: `A workflow needs ${exactly ? 'exactly' : 'at least'} ${plural(minimum, `${spec.display_name} node`)}`,
      })
    }
  }
  return errors
}

/** Transitions become functions named after their label, so two transitions out of one node must not share a name. */
const transitionName = (label: string) => label.toLowerCase().replace(/[^a-z0-9]/g, '_')

function checkTransitionNames(edges: AgentEdge[]): DefinitionError[] {
  const errors: DefinitionError[] = []
  const namesBySource = new Map<string, Set<string>>()
  for (const edge of edges) {
    if (typeof edge.data.label !== 'string') continue
    const name = transitionName(edge.data.label)
    const names = namesBySource.get(edge.source) ?? new Set<string>()
    namesBySource.set(edge.source, names)
    if (names.has(name)) {
      errors.push({
        kind: 'edge',
        id: edge.id,
        field: 'data.label',
        message: `Another transition out of node '${edge.source}' already has the name '${name}'`,
      })
    }
    names.add(name)
  }
  return errors
}

function checkTriggerPaths(nodes: AgentNode[]): { errors: DefinitionError[]; triggerPaths: string[] } {
  const errors: DefinitionError[] = []
  const triggerPaths: string[] = []
  for (const node of findTriggerNodes({ nodes })) {
    const path = node.data.trigger_path
    if (typeof path !== 'string') continue
    if (triggerPaths.includes(path)) {
      errors.push({
        kind: 'node',
        id: node.id,
        field: 'data.trigger_path',
        message: `Trigger path '${path}' is used by another trigger node of this workflow`,
      })
    } else triggerPaths.push(path)
  }
  return { errors, triggerPaths }
}

/**
 * Checks a definition against the catalog `nodeTypes`; `prepareNode` may fill in a node's data (of a known type) before
 * it is checked. Never throws and never changes `input`.
 */
export function checkDefinition(
  input: unknown,
  nodeTypes: readonly NodeSpec[],
  prepareNode: (data: Record<string, unknown>, type: string) => void = () => {},
): DefinitionValidation {
  const typesByName = new Map(nodeTypes.map((spec) => [spec.name, spec]))
  if (!isPlainObject(input)) {
    return {
      definition: { nodes: [], edges: [] },
      errors: [{ kind: 'workflow', id: null, field: null, message: 'Workflow definition must be a JSON object' }],
      triggerPaths: [],
    }
  }
  const definition = cloneJson(input) as AgentDefinition
  const errors: DefinitionError[] = []
  const agentError = (field: string, message: string) => errors.push({ kind: 'workflow', id: null, field, message })
  if (!Array.isArray(definition.nodes)) agentError('nodes', 'nodes must be a list')
  if (!Array.isArray(definition.edges)) agentError('edges', 'edges must be a list')
  const { viewport } = definition
  if (
    viewport !== undefined &&
    !(isPlainObject(viewport) && [viewport.x, viewport.y, viewport.zoom].every(isFiniteNumber))
  ) {
    agentError('viewport', 'viewport must be an object with numeric x, y and zoom')
  }
  if (errors.length > 0) return { definition, errors, triggerPaths: [] }

  const nodeIds = new Set<string>()
  const typedNodes: AgentNode[] = []
  definition.nodes.forEach((node: unknown, index) => {
    if (!isPlainObject(node)) {
      errors.push({ kind: 'node', id: null, field: null, message: `nodes[${index}] must be an object` })
      return
    }
    const id = isNonEmptyString(node.id) ? node.id : null
    const nodeError = ({ field, message }: FieldError) => errors.push({ kind: 'node', id, field, message })
    if (id === null) nodeError({ field: 'id', message: `nodes[${index}] needs an id: a non-empty string` })
    else if (nodeIds.has(id)) nodeError({ field: 'id', message: `Node id '${id}' is used by more than one node` })
    else nodeIds.add(id)
    const { position } = node
    if (
      position !== undefined &&
      !(isPlainObject(position) && isFiniteNumber(position.x) && isFiniteNumber(position.y))
    ) {
      nodeError({ field: 'position', message: 'position must be an object with numeric x and y' })
    }
    const spec = typeof node.type === 'string' ? typesByName.get(node.type) : undefined
    if (!spec) {
      nodeError({
        field: 'type',
        message: typeof node.type === 'string' ? `Unknown node type '${node.type}'` : 'Node type must be a string',
      })
      return
    }
    node.data ??= {}
    if (!isPlainObject(node.data)) {
      nodeError({ field: 'data', message: 'data must be an object' })
      return
    }
    prepareNode(node.data, spec.name)
    checkProperties(spec.properties, node.data, 'data').forEach(nodeError)
    if (id !== null) typedNodes.push(node as AgentNode)
  })

  const edgeIds = new Set<string>()
  const connectedEdges: AgentEdge[] = []
  definition.edges.forEach((edge: unknown, index) => {
    if (!isPlainObject(edge)) {
      errors.push({ kind: 'edge', id: null, field: null, message: `edges[${index}] must be an object` })
      return
    }
    const id = isNonEmptyString(edge.id) ? edge.id : null
    const edgeError = ({ field, message }: FieldError) => errors.push({ kind: 'edge', id, field, message })
    if (id === null) edgeError({ field: 'id', message: `edges[${index}] needs an id: a non-empty string` })
    else if (edgeIds.has(id)) edgeError({ field: 'id', message: `Edge id '${id}' is used by more than one edge` })
    else edgeIds.add(id)
    let connected = true
    for (const end of ['source', 'target'] as const) {
      if (isNonEmptyString(edge[end]) && nodeIds.has(edge[end])) continue
      connected = false
      edgeError({
        field: end,
        message: `${end} ${JSON.stringify(edge[end] ?? null)} is not the id of a node of this workflow`,
      })
    }
    edge.data ??= {}
    if (!isPlainObject(edge.data)) {
      edgeError({ field: 'data', message: 'data must be an object' })
      return
    }
    checkProperties(EDGE_DATA_PROPERTIES, edge.data, 'data').forEach(edgeError)
    if (id !== null && connected) connectedEdges.push(edge as AgentEdge)
  })

  errors.push(
    ...checkGraphConstraints(typedNodes, connectedEdges, typesByName),
    ...checkTransitionNames(connectedEdges),
  )
  const triggers = checkTriggerPaths(typedNodes)
  errors.push(...triggers.errors)
  return { definition, errors, triggerPaths: triggers.triggerPaths }
}

export function findTriggerNodes(definition: Pick<AgentDefinition, 'nodes'>): AgentNode[] {
  return definition.nodes.filter((node) => node.type === 'trigger')
}
