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
import { Versions } from './versions'

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
  const [serverErrors, setServerErrors] = useState<DefinitionError[]>([])
  const [requestError, setRequestError] = useState<ApiError | null>(null)
  const [notice, setNotice] = useState('')
  const [tab, setTab] = useState<Tab>('graph')
  const [testing, setTesting] = useState(false)
  const [versionsGeneration, setVersionsGeneration] = useState(0)
  const definition = history.present
  const localErrors = useMemo(() => checkDefinition(definition, catalog).errors, [definition, catalog])
  const errors = useMemo(() => [...localErrors, ...serverErrors], [localErrors, serverErrors])
  const places = useMemo(() => errorsByPlace(errors), [errors])
  const dirty = snapshot(name, definition, configurations) !== saved

  useEffect(() => {
    document.title = `${name} · Ringbase`
  }, [name])

  const edit = (next: Definition, mergeKey: string | null = null) => {
    setHistory((old) => change(old, next, mergeKey))
    setServerErrors([])
    setNotice('')
  }

  const save = async (): Promise<boolean> => {
    setRequestError(null)
    setServerErrors([])
    try {
      const updated = await api<Agent>('PUT', `/api/v1/workflow/${agent.id}`, {
        name,
        workflow_definition: definition,
        workflow_configurations: configurations,
      })
      setAgent(updated)
      // the server mints trigger paths: what it stored is what the editor holds from now on
      setHistory((old) => ({ ...old, present: updated.workflow_definition }))
      setSaved(snapshot(updated.name, updated.workflow_definition, updated.workflow_configurations))
      setConfigurations(updated.workflow_configurations)
      setVersionsGeneration((value) => value + 1)
      setNotice(`Draft saved (version ${updated.version_number}).`)
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
      const published = await api<Agent>('POST', `/api/v1/workflow/${agent.id}/publish`)
      setAgent(published)
      setVersionsGeneration((value) => value + 1)
      setNotice(`Published version ${published.version_number}.`)
    } catch (caught) {
      setRequestError(caught as ApiError)
    }
  }

  // Ctrl+Z, Ctrl+Shift+Z and Ctrl+Y undo and redo the graph, except in a text field (where they edit the text).
  useEffect(() => {
    const onKeyDown = (event: globalThis.KeyboardEvent) => {
      const target = event.target as HTMLElement
      if (/^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) || !(event.ctrlKey || event.metaKey)) return
      const key = event.key.toLowerCase()
      if (key === 'z' && !event.shiftKey) setHistory(undo)
      else if (key === 'y' || (key === 'z' && event.shiftKey)) setHistory(redo)
      else return
      event.preventDefault()
    }
    window.addEventListener('keydown', onKeyDown)
    return () => window.removeEventListener('keydown', onKeyDown)
  }, [])

  const knownVariables = useMemo(() => {
    const names = new Set(Object.keys(agent.template_context_variables))
    for (const node of definition.nodes)
      if (Array.isArray(node.data.extraction_variables))
        for (const row of node.data.extraction_variables) if (row?.name) names.add(String(row.name).toLowerCase())
    return names
  }, [agent.template_context_variables, definition])

  return (
    <Page
      title={name || 'Agent'}
      actions={
        <>
          <button type="button" className="secondary" onClick={() => setHistory(undo)} disabled={!history.past.length}>
            Undo
          </button>
          <button
            type="button"
            className="secondary"
            onClick={() => setHistory(redo)}
            disabled={!history.future.length}
          >
            Redo
          </button>
          <button type="button" className="secondary" onClick={save}>
            Save draft
          </button>
          <button type="button" onClick={publish}>
            Publish
          </button>
          <button
            type="button"
            className={testing ? '' : 'secondary'}
            aria-expanded={testing}
            aria-controls="test-panel"
            onClick={() => setTesting(!testing)}
          >
            {testing ? 'Hide the test panel' : 'Test the agent'}
          </button>
        </>
      }
    >
      <LeaveGuard
        when={dirty}
        message="This agent has changes that are not saved: leaving the editor drops them (and their undo history)."
      />
      <div className="editor-status" role="status">
        <span>
          Version {agent.version_number} ({agent.version_status}){dirty ? ' · unsaved changes' : ''}
          {localErrors.length ? ` · ${localErrors.length} problem${localErrors.length === 1 ? '' : 's'}` : ''}
        </span>
        {notice ? <span className="ok"> {notice}</span> : null}
      </div>
      {requestError ? <ErrorNote error={requestError} /> : null}
      <fieldset className="tabs">
        <legend className="visually-hidden">Editor sections</legend>
        {TABS.map(([key, label]) => (
          <button
            key={key}
            type="button"
            className={tab === key ? '' : 'secondary'}
            aria-pressed={tab === key}
            onClick={() => setTab(key)}
          >
            {label}
          </button>
        ))}
      </fieldset>
      {/* The test panel takes a column only while it is open: the canvas has the room otherwise. */}
      <div className={testing ? 'editor testing' : 'editor'}>
        <div className="editor-main">
          {tab === 'graph' ? (
            <div className="editor-graph">
              <Canvas
                definition={definition}
                catalog={catalog}
                problems={places}
                selection={selection}
                onSelect={setSelection}
                onChange={edit}
              />
              <Inspector
                definition={definition}
                catalog={catalog}
                selection={selection}
                onSelect={setSelection}
                onChange={edit}
                errors={errors}
                context={{ lookups, knownVariables, errors: new Map() }}
              />
            </div>
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
              onRestore={(version) => {
                edit(version.workflow_json as Definition)
                setConfigurations(version.workflow_configurations)
                setNotice(`Version ${version.version_number} restored into the editor: save the draft to keep it.`)
                setTab('graph')
              }}
            />
          ) : null}
          {tab === 'json' ? (
            <textarea
              className="json card code"
              aria-label="Definition JSON"
              readOnly
              rows={30}
              value={JSON.stringify(definition, null, 2)}
            />
          ) : null}
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
