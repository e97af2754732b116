// The agent definition as the editor holds it: undoable history, readable diffs between versions, copies for duplicates.
import type { AgentDefinition, DefinitionError } from '../../src/definition/rules'

export type Definition = AgentDefinition

/** A deep copy with every API Trigger's path cleared: the server mints new ones (paths are unique per installation). */
export function withoutTriggerPaths(definition: Definition): Definition {
  const copy: Definition = JSON.parse(JSON.stringify(definition))
  for (const node of copy.nodes) if (node.type === 'trigger') delete node.data.trigger_path
  return copy
}

/** Undo/redo over whole snapshots. `mergeKey`: consecutive changes with the same key (typing in one field) are one step. */
export type History = { past: Definition[]; present: Definition; future: Definition[]; mergeKey: string | null }

export const startHistory = (present: Definition): History => ({ past: [], present, future: [], mergeKey: null })

export function change(history: History, next: Definition, mergeKey: string | null = null): History {
  if (mergeKey !== null && mergeKey === history.mergeKey) return { ...history, present: next, future: [] }
  return { past: [...history.past.slice(-199), history.present], present: next, future: [], mergeKey }
}

export function undo(history: History): History {
  const previous = history.past.at(-1)
  if (!previous) return history
  return {
    past: history.past.slice(0, -1),
    present: previous,
    future: [history.present, ...history.future],
    mergeKey: null,
  }
}

export function redo(history: History): History {
  const [next, ...rest] = history.future
  if (!next) return history
  return { past: [...history.past, history.present], present: next, future: rest, mergeKey: null }
}

/** Problems by where they are: `node:<id>`, `edge:<id>`, or `workflow`. */
export function errorsByPlace(errors: DefinitionError[]): Map<string, DefinitionError[]> {
  const places = new Map<string, DefinitionError[]>()
  for (const error of errors) {
    const place = error.kind === 'workflow' || error.id === null ? 'workflow' : `${error.kind}:${error.id}`
    places.set(place, [...(places.get(place) ?? []), error])
  }
  return places
}

const show = (value: unknown) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value)
  return text === undefined ? '(none)' : text.length > 80 ? `${text.slice(0, 79)}…` : text
}

/** Every leaf of a JSON value by its path (`data.extraction_variables[0].name`). */
function leaves(value: unknown, path: string, out: Map<string, unknown>): Map<string, unknown> {
  if (Array.isArray(value) && value.length > 0) value.forEach((item, index) => leaves(item, `${path}[${index}]`, out))
  else if (value && typeof value === 'object' && Object.keys(value).length > 0)
    for (const [key, item] of Object.entries(value)) leaves(item, path ? `${path}.${key}` : key, out)
  else out.set(path, value)
  return out
}

function diffFields(before: unknown, after: unknown): string[] {
  const old = leaves(before, '', new Map())
  const now = leaves(after, '', new Map())
  const paths = [...new Set([...old.keys(), ...now.keys()])]
  return paths
    .filter((path) => JSON.stringify(old.get(path)) !== JSON.stringify(now.get(path)))
    .map((path) => `${path}: ${show(old.get(path))} → ${show(now.get(path))}`)
}

type Item = { id: string; data?: Record<string, unknown> }

function diffItems(kind: string, before: Item[], after: Item[], name: (item: Item) => string): string[] {
  const old = new Map(before.map((item) => [item.id, item]))
  const now = new Map(after.map((item) => [item.id, item]))
  const lines: string[] = []
  for (const [id, item] of now) {
    const was = old.get(id)
    if (!was) lines.push(`${kind} ${name(item)} added`)
    else for (const field of diffFields(was, item)) lines.push(`${kind} ${name(item)}: ${field}`)
  }
  for (const [id, item] of old) if (!now.has(id)) lines.push(`${kind} ${name(item)} removed`)
  return lines
}

/** What changed from `before` to `after`, one line per node, edge or setting field. */
export function describeChanges(
  before: { definition: Definition; configurations: Record<string, unknown> },
  after: { definition: Definition; configurations: Record<string, unknown> },
): string[] {
  const nodeName = (item: Item) => `“${String(item.data?.name ?? item.id)}”`
  const names = new Map(
    [...before.definition.nodes, ...after.definition.nodes].map((node) => [node.id, nodeName(node)]),
  )
  const edgeName = (item: Item) => {
    const edge = item as Item & { source: string; target: string }
    return `${names.get(edge.source) ?? edge.source} → ${names.get(edge.target) ?? edge.target}`
  }
  return [
    ...diffItems('Node', before.definition.nodes, after.definition.nodes, nodeName),
    ...diffItems('Edge', before.definition.edges, after.definition.edges, edgeName),
    ...diffFields(before.definition.viewport ?? null, after.definition.viewport ?? null).map(
      (line) => `Viewport ${line}`,
    ),
    ...diffFields(before.configurations, after.configurations).map((line) => `Setting ${line}`),
  ]
}
