// The agent editor: the graph on a canvas, forms for the selected node or edge, settings, versions, and a test chat.
import { useEffect, useMemo, useState } from 'react'
import { ReactFlowProvider } from '@xyflow/react'
import type { NodeSpec } from '../../src/definition/rules'
import { checkDefinition, type DefinitionError } from '../../src/definition/rules'
import { api, ApiError, type DefinitionErrors } from '../api'
import { ErrorNote, LeaveGuard, Page, Show, useLoad } from '../ui'
import { Canvas, type Selection } from './canvas'
import type { Lookups } from './fields'
import { change, errorsByPlace, redo, startHistory, undo, type Definition, type History } from './graph'
import { Inspector } from './inspector'
import { Settings } from './settings'
import { TestPanel } from './test-panel'
import { Versions, type Version } from './versions'

export type Agent = {
  id: number
  name: string
  status: string
  workflow_definition: Definition
  workflow_configurations: Record<string, unknown>
  template_context_variables: Record<string, string>
  version_number: number
  version_status: 'draft' | 'published' | 'archived'
}

const options = (items: any[], value: string, label: (item: any) => string) =>
  items.map((item) => ({ value: String(item[value]), label: label(item) }))

async function loadLookups(): Promise<Lookups> {
  const [tools, documents, recordings, credentials] = await Promise.all([
    api<any[]>('GET', '/api/v1/tools/'),
    api<{ documents: any[] }>('GET', '/api/v1/knowledge-base/documents?limit=100'),
    api<{ recordings: any[] }>('GET', '/api/v1/workflow-recordings/'),
    api<any[]>('GET', '/api/v1/credentials'),
  ])
  return {
    tools: options(tools, 'tool_uuid', (tool) => tool.name),
    documents: options(documents.documents, 'document_uuid', (document) => document.filename),
    recordings: options(
      recordings.recordings,
      'recording_id',
      (recording) => `${recording.recording_id}: ${recording.transcript}`,
    ),
    credentials: options(credentials, 'uuid', (credential) => credential.name),
  }
}

export function AgentEditor({ id }: { id: number }) {
  const loaded = useLoad(async () => {
    const [agent, catalog, lookups] = await Promise.all([
      api<Agent>('GET', `/api/v1/workflow/fetch/${id}`),
      api<{ node_types: NodeSpec[] }>('GET', '/api/v1/node-types'),
      loadLookups(),
    ])
    return { agent, catalog: catalog.node_types, lookups }
  }, [id])
  return (
    <Show loaded={loaded} what="the agent">
      {(data) => (
        <ReactFlowProvider>
          <EditorLoaded key={id} {...data} />
        </ReactFlowProvider>
      )}
    </Show>
  )
}

type Tab = 'graph' | 'settings' | 'versions' | 'json'
const TABS: [Tab, string][] = [
  ['graph', 'Graph'],
  ['settings', 'Settings'],
  ['versions', 'Versions'],
  ['json', 'JSON'],
]

/** The last saved state, to tell whether there is anything to save. */
const snapshot = (name: string, definition: Definition, configurations: Record<string, unknown>) =>
  JSON.stringify([name, definition, configurations])

function EditorLoaded({
  agent: loadedAgent,
  catalog,
  lookups,
}: {
  agent: Agent
  catalog: NodeSpec[]
  lookups: Lookups
}) {
  const [agent, setAgent] = useState(loadedAgent)
  const [history, setHistory] = useState<History>(() => startHistory(loadedAgent.workflow_definition))
  const [configurations, setConfigurations] = useState(loadedAgent.workflow_configurations)
  const [name, setName] = useState(loadedAgent.name)
  const [saved, setSaved] = useState(() =>
    snapshot(loadedAgent.name, loadedAgent.workflow_definition, loadedAgent.workflow_configurations),
  )
  const [selection, setSelection] = useState<Selection>(null)
  const [notice, setNotice] = useState('')
  const [tab, setTab] = useState<Tab>('graph')
  const [testing, setTesting] = useState(false)
  const [versionsGeneration, setVersionsGeneration] = useState(0)
  const definition = history.present
  const localErrors = useMemo(() => checkDefinition(definition, catalog).errors, [definition, catalog])
  const dirty = snapshot(name, definition, configurations) !== saved

  useEffect(() => {
    document.title = `${name} · Ringbase`
  }, [name])

  const edit = (next: Definition, mergeKey: string | null = null) => {
    setHistory((old) => change(old, next, mergeKey))
    clearServerErrors()
    setNotice('')
  }

  const stored = (updated: Agent, how: 'saved' | 'published') => {
    setAgent(updated)
    setVersionsGeneration((value) => value + 1)
    if (how === 'published') return setNotice(`Published version ${updated.version_number}.`)
    // the server mints trigger paths: what it stored is what the editor holds from now on
    setHistory((old) => ({ ...old, present: updated.workflow_definition }))
    setSaved(snapshot(updated.name, updated.workflow_definition, updated.workflow_configurations))
    setConfigurations(updated.workflow_configurations)
    setNotice(`Draft saved (version ${updated.version_number}).`)
  }
  const { save, publish, serverErrors, requestError, clearServerErrors } = useSaving(
    agent.id,
    { name, workflow_definition: definition, workflow_configurations: configurations },
    dirty,
    stored,
  )
  const errors = useMemo(() => [...localErrors, ...serverErrors], [localErrors, serverErrors])

  const restore = (version: Version) => {
    edit(version.workflow_json as Definition)
    setConfigurations(version.workflow_configurations)
    setNotice(`Version ${version.version_number} restored into the editor: save the draft to keep it.`)
    setTab('graph')
  }

  useUndoKeys(setHistory)

  return (
    <Page
      title={name || 'Agent'}
      actions={
        <EditorActions
          history={history}
          onHistory={setHistory}
          onSave={save}
          onPublish={publish}
          testing={testing}
          onTesting={setTesting}
        />
      }
    >
      <LeaveGuard
        when={dirty}
        message="This agent has changes that are not saved: leaving the editor drops them (and their undo history)."
      />
      <EditorStatus agent={agent} dirty={dirty} problems={localErrors.length} notice={notice} />
      {requestError ? <ErrorNote error={requestError} /> : null}
      <EditorTabs tab={tab} onTab={setTab} />
      {/* The test panel takes a column only while it is open: the canvas has the room otherwise. */}
      <div className={testing ? 'editor testing' : 'editor'}>
        <div className="editor-main">
          {tab === 'graph' ? (
            <GraphSection
              definition={definition}
              catalog={catalog}
              errors={errors}
              selection={selection}
              onSelect={setSelection}
              onChange={edit}
              lookups={lookups}
              templateVariables={agent.template_context_variables}
            />
          ) : null}
          {tab === 'settings' ? (
            <Settings
              name={name}
              onName={setName}
              configurations={configurations}
              onChange={setConfigurations}
              error={requestError}
            />
          ) : null}
          {tab === 'versions' ? (
            <Versions
              agentId={agent.id}
              generation={versionsGeneration}
              current={{ definition, configurations }}
              onRestore={restore}
            />
          ) : null}
          {tab === 'json' ? <DefinitionJson definition={definition} /> : null}
        </div>
        <TestPanel
          hidden={!testing}
          agentId={agent.id}
          definition={definition}
          variables={agent.template_context_variables}
          dirty={dirty}
        />
      </div>
    </Page>
  )
}

type Draft = Pick<Agent, 'name' | 'workflow_definition' | 'workflow_configurations'>

/**
 * Saving the draft and publishing it (the draft saved first when it has changes): `onStored` gets what the server
 * stored; a refusal is kept to show, with the definition's problems at their places.
 */
function useSaving(
  agentId: number,
  draft: Draft,
  dirty: boolean,
  onStored: (agent: Agent, how: 'saved' | 'published') => void,
) {
  const [serverErrors, setServerErrors] = useState<DefinitionError[]>([])
  const [requestError, setRequestError] = useState<ApiError | null>(null)
  const save = async (): Promise<boolean> => {
    setRequestError(null)
    setServerErrors([])
    try {
      onStored(await api<Agent>('PUT', `/api/v1/workflow/${agentId}`, draft), 'saved')
      return true
    } catch (caught) {
      const error = caught instanceof ApiError ? caught : new ApiError(0, (caught as Error).message)
      const detail = error.detail as DefinitionErrors
      if (detail && typeof detail === 'object' && 'errors' in detail) setServerErrors(detail.errors)
      setRequestError(error)
      return false
    }
  }
  const publish = async () => {
    if (dirty && !(await save())) return
    try {
      onStored(await api<Agent>('POST', `/api/v1/workflow/${agentId}/publish`), 'published')
    } catch (caught) {
      setRequestError(caught as ApiError)
    }
  }
  return { save, publish, serverErrors, requestError, clearServerErrors: () => setServerErrors([]) }
}

/** The version being edited, whether it has unsaved changes or problems, and what the last action did. */
function EditorStatus(props: { agent: Agent; dirty: boolean; problems: number; notice: string }) {
  const { agent, problems, notice } = props
  return (
    <div className="editor-status" role="status">
      <span>
        Version {agent.version_number} ({agent.version_status}){props.dirty ? ' · unsaved changes' : ''}
        {problems ? ` · ${problems} problem${problems === 1 ? '' : 's'}` : ''}
      </span>
      {notice ? <span className="ok"> {notice}</span> : null}
    </div>
  )
}

const DefinitionJson = ({ definition }: { definition: Definition }) => (
  <textarea
    className="json card code"
    aria-label="Definition JSON"
    readOnly
    rows={30}
    value={JSON.stringify(definition, null, 2)}
  />
)

/** The canvas and, beside it, the form of what is selected; problems are shown at their places. */
function GraphSection(props: {
  definition: Definition
  catalog: NodeSpec[]
  errors: DefinitionError[]
  selection: Selection
  onSelect: (selection: Selection) => void
  onChange: (next: Definition, mergeKey?: string | null) => void
  lookups: Lookups
  templateVariables: Record<string, string>
}) {
  const { definition, catalog, errors, selection, templateVariables } = props
  const places = useMemo(() => errorsByPlace(errors), [errors])
  const knownVariables = useMemo(() => knownVariablesOf(templateVariables, definition), [templateVariables, definition])
  return (
    <div className="editor-graph">
      <Canvas
        definition={definition}
        catalog={catalog}
        problems={places}
        selection={selection}
        onSelect={props.onSelect}
        onChange={props.onChange}
      />
      <Inspector
        definition={definition}
        catalog={catalog}
        selection={selection}
        onSelect={props.onSelect}
        onChange={props.onChange}
        errors={errors}
        context={{ lookups: props.lookups, knownVariables, errors: new Map() }}
      />
    </div>
  )
}

/** The editor's buttons: undo and redo the graph, save, publish, and the test panel shown or hidden. */
function EditorActions(props: {
  history: History
  onHistory: (change: (old: History) => History) => void
  onSave: () => void
  onPublish: () => void
  testing: boolean
  onTesting: (testing: boolean) => void
}) {
  const { history, onHistory, testing } = props
  return (
    <>
      <button type="button" className="secondary" onClick={() => onHistory(undo)} disabled={!history.past.length}>
        Undo
      </button>
      <button type="button" className="secondary" onClick={() => onHistory(redo)} disabled={!history.future.length}>
        Redo
      </button>
      <button type="button" className="secondary" onClick={props.onSave}>
        Save draft
      </button>
      <button type="button" onClick={props.onPublish}>
        Publish
      </button>
      <button
        type="button"
        className={testing ? '' : 'secondary'}
        aria-expanded={testing}
        aria-controls="test-panel"
        onClick={() => props.onTesting(!testing)}
      >
        {testing ? 'Hide the test panel' : 'Test the agent'}
      </button>
    </>
  )
}

function EditorTabs({ tab, onTab }: { tab: Tab; onTab: (tab: Tab) => void }) {
  return (
    <fieldset className="tabs">
      <legend className="visually-hidden">Editor sections</legend>
      {TABS.map(([key, label]) => (
        <button
          key={key}
          type="button"
          className={tab === key ? '' : 'secondary'}
          aria-pressed={tab === key}
          onClick={() => onTab(key)}
        >
          {label}
        </button>
      ))}
    </fieldset>
  )
}

/** Ctrl+Z, Ctrl+Shift+Z and Ctrl+Y undo and redo the graph, except in a text field (where they edit the text). */
function useUndoKeys(onHistory: (change: (old: History) => History) => void) {
  useEffect(() => {
    const onKeyDown = (event: globalThis.KeyboardEvent) => {
      const target = event.target as HTMLElement
      if (/^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) || !(event.ctrlKey || event.metaKey)) return
      const key = event.key.toLowerCase()
      if (key === 'z' && !event.shiftKey) onHistory(undo)
      else if (key === 'y' || (key === 'z' && event.shiftKey)) onHistory(redo)
      else return
      event.preventDefault()
    }
    window.addEventListener('keydown', onKeyDown)
    return () => window.removeEventListener('keydown', onKeyDown)
  }, [onHistory])
}

/** The variables a field may name: the agent's template context and every node's extraction variables. */
function knownVariablesOf(templateVariables: Record<string, string>, definition: Definition): Set<string> {
  const names = new Set(Object.keys(templateVariables))
  for (const node of definition.nodes)
    if (Array.isArray(node.data.extraction_variables))
      for (const row of node.data.extraction_variables) if (row?.name) names.add(String(row.name).toLowerCase())
  return names
}
