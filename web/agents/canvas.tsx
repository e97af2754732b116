// The graph on a React Flow canvas. The definition stays the one source of truth: React Flow's nodes and edges are
// derived from it on each render, and its changes (moves, connections, deletions) are written back into it.
import { useMemo, useState } from 'react'
import {
  Background,
  Controls,
  Handle,
  Position,
  ReactFlow,
  type Connection,
  type Edge,
  type EdgeChange,
  type Node,
  type NodeChange,
  type NodeProps,
  type Viewport,
} from '@xyflow/react'
import type { NodeSpec } from '../../src/definition/rules'
import type { DefinitionError } from '../../src/definition/rules'
import type { Definition } from './graph'

export type Selection = { kind: 'node' | 'edge'; id: string } | null

type CardData = { title: string; kind: string; summary: string; problems: number; incoming: boolean; outgoing: boolean }

function NodeCard({ data, selected }: NodeProps<Node<CardData>>) {
  return (
    <div className={`graph-node${selected ? ' selected' : ''}${data.problems ? ' has-errors' : ''}`}>
      {data.incoming ? <Handle type="target" position={Position.Top} /> : null}
      <div className="graph-node-kind">{data.kind}</div>
      <div className="graph-node-title" title={data.title}>
        {data.title}
      </div>
      {data.summary ? <div className="graph-node-summary">{data.summary}</div> : null}
      {data.problems ? (
        <div className="graph-node-errors" role="status">
          {data.problems === 1 ? '1 problem' : `${data.problems} problems`}
        </div>
      ) : null}
      {data.outgoing ? <Handle type="source" position={Position.Bottom} /> : null}
    </div>
  )
}

const NODE_TYPES = { card: NodeCard }

export function Canvas({
  definition,
  catalog,
  problems,
  selection,
  onSelect,
  onChange,
}: {
  definition: Definition
  catalog: NodeSpec[]
  problems: Map<string, DefinitionError[]>
  selection: Selection
  onSelect: (selection: Selection) => void
  onChange: (definition: Definition, mergeKey?: string | null) => void
}) {
  const [sizes, setSizes] = useState<Record<string, { width: number; height: number }>>({})
  const nodes = useMemo<Node<CardData>[]>(
    () =>
      definition.nodes.map((node, index) => {
        const spec = catalog.find((item) => item.name === node.type)
        const limits = spec?.graph_constraints ?? {}
        const title = String(node.data.name || spec?.display_name || node.type)
        const count = problems.get(`node:${node.id}`)?.length ?? 0
        return {
          id: node.id,
          type: 'card',
          position: node.position ?? { x: 40 * index, y: 120 * index },
          measured: sizes[node.id],
          selected: selection?.kind === 'node' && selection.id === node.id,
          ariaLabel: `${spec?.display_name ?? node.type} node ${title}${count ? `, ${count} problems` : ''}`,
          data: {
            title,
            kind: spec?.display_name ?? node.type,
            summary: typeof node.data.prompt === 'string' ? node.data.prompt.slice(0, 90) : '',
            problems: count,
            incoming: limits.max_incoming !== 0,
            outgoing: limits.max_outgoing !== 0,
          },
        }
      }),
    [definition.nodes, catalog, problems, sizes, selection],
  )
  const edges = useMemo<Edge[]>(
    () =>
      definition.edges.map((edge) => ({
        id: edge.id,
        source: edge.source,
        target: edge.target,
        ...(typeof edge.sourceHandle === 'string' ? { sourceHandle: edge.sourceHandle } : {}),
        ...(typeof edge.targetHandle === 'string' ? { targetHandle: edge.targetHandle } : {}),
        label: String(edge.data?.label ?? ''),
        selected: selection?.kind === 'edge' && selection.id === edge.id,
        className: problems.has(`edge:${edge.id}`) ? 'has-errors' : undefined,
        ariaLabel: `Edge ${String(edge.data?.label || '(no label)')} from ${edge.source} to ${edge.target}`,
      })),
    [definition.edges, selection, problems],
  )

  const onNodesChange = (changes: NodeChange<Node<CardData>>[]) => {
    let next = definition
    for (const item of changes) {
      if (item.type === 'dimensions' && item.dimensions) setSizes((old) => ({ ...old, [item.id]: item.dimensions! }))
      else if (item.type === 'select' && item.selected) onSelect({ kind: 'node', id: item.id })
      else if (item.type === 'position' && item.position) {
        const position = { x: item.position.x, y: item.position.y }
        next = { ...next, nodes: next.nodes.map((node) => (node.id === item.id ? { ...node, position } : node)) }
        onChange(next, `move:${item.id}`)
      } else if (item.type === 'remove') {
        next = removeNode(next, item.id)
        onChange(next)
        onSelect(null)
      }
    }
  }
  const onEdgesChange = (changes: EdgeChange[]) => {
    for (const item of changes) {
      if (item.type === 'select' && item.selected) onSelect({ kind: 'edge', id: item.id })
      else if (item.type === 'remove') {
        onChange({ ...definition, edges: definition.edges.filter((edge) => edge.id !== item.id) })
        onSelect(null)
      }
    }
  }
  const onConnect = (connection: Connection) => {
    const next = addEdge(definition, connection.source, connection.target)
    onChange(next)
    onSelect({ kind: 'edge', id: next.edges.at(-1)!.id })
  }
  return (
    <section className="canvas" aria-label="Graph of the agent">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={NODE_TYPES}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        onPaneClick={() => onSelect(null)}
        defaultViewport={definition.viewport ?? { x: 40, y: 40, zoom: 1 }}
        onMoveEnd={(_, viewport: Viewport) => {
          const { x, y, zoom } = definition.viewport ?? {}
          if (viewport.x !== x || viewport.y !== y || viewport.zoom !== zoom)
            onChange({ ...definition, viewport }, 'viewport')
        }}
        minZoom={0.2}
        maxZoom={2}
        deleteKeyCode={['Delete', 'Backspace']}
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </section>
  )
}

/** The definition without the node and the edges touching it. */
export function removeNode(definition: Definition, id: string): Definition {
  return {
    ...definition,
    nodes: definition.nodes.filter((node) => node.id !== id),
    edges: definition.edges.filter((edge) => edge.source !== id && edge.target !== id),
  }
}

/** The definition with an edge from `source` to `target` (an id not taken yet), its label and condition to fill in. */
export function addEdge(definition: Definition, source: string, target: string): Definition {
  const taken = new Set(definition.edges.map((edge) => edge.id))
  let id = `${source}-${target}`
  for (let n = 2; taken.has(id); n++) id = `${source}-${target}-${n}`
  return { ...definition, edges: [...definition.edges, { id, source, target, data: { label: '', condition: '' } }] }
}
