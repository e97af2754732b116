// Beside the canvas: the form of the selected node or edge, or (nothing selected) adding nodes and edges by keyboard.
import { useState } from 'react'
import type { NodeSpec } from '../../src/definition/rules'
import { EDGE_DATA_PROPERTIES, type DefinitionError } from '../../src/definition/rules'
import { addEdge, removeNode, type Selection } from './canvas'
import { PropertyFields, type FormContext } from './fields'
import type { Definition } from './graph'

type Props = {
  definition: Definition
  catalog: NodeSpec[]
  selection: Selection
  onSelect: (selection: Selection) => void
  onChange: (definition: Definition, mergeKey?: string | null) => void
  errors: DefinitionError[]
  context: FormContext
}

/** The problems of one node or edge by field; those of the item as a whole under ''. */
function fieldErrors(errors: DefinitionError[], kind: string, id: string): Map<string, string[]> {
  const fields = new Map<string, string[]>()
  for (const error of errors)
    if (error.kind === kind && error.id === id) {
      const field = error.field ?? ''
      fields.set(field, [...(fields.get(field) ?? []), error.message])
    }
  return fields
}

export function Inspector(props: Props) {
  const { selection, definition } = props
  const node = selection?.kind === 'node' ? definition.nodes.find((item) => item.id === selection.id) : undefined
  const edge = selection?.kind === 'edge' ? definition.edges.find((item) => item.id === selection.id) : undefined
  return (
    <aside className="inspector card" aria-label="Inspector">
      {node ? (
        <NodeForm {...props} nodeId={node.id} />
      ) : edge ? (
        <EdgeForm {...props} edgeId={edge.id} />
      ) : (
        <Outline {...props} />
      )}
    </aside>
  )
}

function Problems({ messages }: { messages: string[] | undefined }) {
  if (!messages?.length) return null
  return (
    <ul className="problems" role="alert">
      {messages.map((message) => (
        <li key={message}>{message}</li>
      ))}
    </ul>
  )
}

function NodeForm({ definition, catalog, onChange, onSelect, errors, context, nodeId }: Props & { nodeId: string }) {
  const node = definition.nodes.find((item) => item.id === nodeId)!
  const spec = catalog.find((item) => item.name === node.type)
  const fields = fieldErrors(errors, 'node', node.id)
  const setData = (data: Record<string, unknown>, field: string) =>
    onChange(
      { ...definition, nodes: definition.nodes.map((item) => (item.id === node.id ? { ...item, data } : item)) },
      `node:${node.id}:${field}`,
    )
  return (
    <form className="form node-form" aria-labelledby="inspector-title" onSubmit={(event) => event.preventDefault()}>
      <h2 id="inspector-title">
        {spec?.display_name ?? node.type}: {String(node.data.name || node.id)}
      </h2>
      <button type="button" className="link" onClick={() => onSelect(null)}>
        Back to the outline
      </button>
      <Problems messages={[...(fields.get('') ?? []), ...(fields.get('type') ?? [])]} />
      {spec ? (
        <PropertyFields
          specs={spec.properties}
          data={node.data}
          path="data"
          onChange={setData}
          context={{ ...context, errors: fields }}
        />
      ) : null}
      <button
        type="button"
        className="secondary danger"
        onClick={() => {
          onChange(removeNode(definition, node.id))
          onSelect(null)
        }}
      >
        Delete this node
      </button>
    </form>
  )
}

function EdgeForm({ definition, onChange, onSelect, errors, context, edgeId }: Props & { edgeId: string }) {
  const edge = definition.edges.find((item) => item.id === edgeId)!
  const fields = fieldErrors(errors, 'edge', edge.id)
  const nameOf = (id: string) => String(definition.nodes.find((node) => node.id === id)?.data.name || id)
  return (
    <form className="form node-form" aria-labelledby="inspector-title" onSubmit={(event) => event.preventDefault()}>
      <h2 id="inspector-title">
        Edge: {nameOf(edge.source)} → {nameOf(edge.target)}
      </h2>
      <button type="button" className="link" onClick={() => onSelect(null)}>
        Back to the outline
      </button>
      <Problems
        messages={[...(fields.get('') ?? []), ...(fields.get('source') ?? []), ...(fields.get('target') ?? [])]}
      />
      <PropertyFields
        specs={EDGE_DATA_PROPERTIES}
        data={edge.data}
        path="data"
        onChange={(data, field) =>
          onChange(
            {
              ...definition,
              edges: definition.edges.map((item) =>
                item.id === edge.id ? { ...item, data: data as typeof edge.data } : item,
              ),
            },
            `edge:${edge.id}:${field}`,
          )
        }
        context={{ ...context, errors: fields }}
      />
      <button
        type="button"
        className="secondary danger"
        onClick={() => {
          onChange({ ...definition, edges: definition.edges.filter((item) => item.id !== edge.id) })
          onSelect(null)
        }}
      >
        Delete this edge
      </button>
    </form>
  )
}

/** A node id not taken yet, from its type. */
function newNodeId(definition: Definition, type: string): string {
  const taken = new Set(definition.nodes.map((node) => node.id))
  let n = definition.nodes.length + 1
  while (taken.has(`${type}-${n}`)) n++
  return `${type}-${n}`
}

function Outline({ definition, catalog, onChange, onSelect, errors }: Props) {
  const [type, setType] = useState('agentNode')
  const [source, setSource] = useState('')
  const [target, setTarget] = useState('')
  const name = (id: string) => String(definition.nodes.find((node) => node.id === id)?.data.name || id)
  const addNode = () => {
    const spec = catalog.find((item) => item.name === type)!
    const id = newNodeId(definition, type)
    const lowest = Math.max(0, ...definition.nodes.map((node) => node.position?.y ?? 0))
    const node = { id, type, position: { x: 0, y: lowest + 200 }, data: { name: spec.display_name } }
    onChange({ ...definition, nodes: [...definition.nodes, node] })
    onSelect({ kind: 'node', id })
  }
  const connect = () => {
    if (!source || !target) return
    const next = addEdge(definition, source, target)
    onChange(next)
    onSelect({ kind: 'edge', id: next.edges.at(-1)!.id })
  }
  const nodeOptions = definition.nodes.map((node) => (
    <option key={node.id} value={node.id}>
      {name(node.id)}
    </option>
  ))
  return (
    <div className="outline">
      <h2>Outline</h2>
      <Problems messages={errors.filter((error) => error.kind === 'workflow').map((error) => error.message)} />
      <div className="inline-form">
        <div className="field">
          <label htmlFor="new-node-type">Node type</label>
          <select id="new-node-type" value={type} onChange={(event) => setType(event.target.value)}>
            {catalog.map((spec) => (
              <option key={spec.name} value={spec.name}>
                {spec.display_name}
              </option>
            ))}
          </select>
        </div>
        <button type="button" onClick={addNode}>
          Add node
        </button>
      </div>
      <div className="inline-form">
        <div className="field">
          <label htmlFor="edge-from">From</label>
          <select id="edge-from" value={source} onChange={(event) => setSource(event.target.value)}>
            <option value="">—</option>
            {nodeOptions}
          </select>
        </div>
        <div className="field">
          <label htmlFor="edge-to">To</label>
          <select id="edge-to" value={target} onChange={(event) => setTarget(event.target.value)}>
            <option value="">—</option>
            {nodeOptions}
          </select>
        </div>
        <button type="button" onClick={connect} disabled={!source || !target}>
          Connect
        </button>
      </div>
      <h3>Nodes</h3>
      <ul className="plain">
        {definition.nodes.map((node) => {
          const count = errors.filter((error) => error.kind === 'node' && error.id === node.id).length
          return (
            <li key={node.id}>
              <button type="button" className="link" onClick={() => onSelect({ kind: 'node', id: node.id })}>
                Edit node {name(node.id)}
              </button>
              {count ? (
                <span className="field-error">
                  {' '}
                  ({count} problem{count === 1 ? '' : 's'})
                </span>
              ) : null}
            </li>
          )
        })}
      </ul>
      <h3>Edges</h3>
      <ul className="plain">
        {definition.edges.map((edge) => (
          <li key={edge.id}>
            <button type="button" className="link" onClick={() => onSelect({ kind: 'edge', id: edge.id })}>
              Edit edge {name(edge.source)} → {name(edge.target)}
              {edge.data?.label ? ` (${String(edge.data.label)})` : ''}
            </button>
          </li>
        ))}
      </ul>
    </div>
  )
}
