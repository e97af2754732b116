// An agent's versions: each with what differs from the editor's graph, and restore (into the editor, saved as a draft).
import { useState } from 'react'
import { api } from '../api'
import { Show, StateBadge, Time, useLoad } from '../ui'
import { describeChanges, type Definition } from './graph'

export type Version = {
  id: number
  version_number: number
  status: string
  created_at: string
  published_at: string | null
  workflow_json: Definition
  workflow_configurations: Record<string, unknown>
}

export function Versions({
  agentId,
  generation,
  current,
  onRestore,
}: {
  agentId: number
  generation: number
  current: { definition: Definition; configurations: Record<string, unknown> }
  onRestore: (version: Version) => void
}) {
  const versions = useLoad(
    () => api<Version[]>('GET', `/api/v1/workflow/${agentId}/versions?limit=50`),
    [agentId, generation],
  )
  const [open, setOpen] = useState<number | null>(null)
  return (
    <section className="card" aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <Show loaded={versions} what="the versions">
        {(list) => (
          <ol className="plain versions">
            {list.map((version) => {
              const changes =
                open === version.id
                  ? describeChanges(
                      { definition: version.workflow_json, configurations: version.workflow_configurations },
                      current,
                    )
                  : []
              return (
                <li key={version.id} className="version">
                  <div className="version-head">
                    <strong>Version {version.version_number}</strong> <StateBadge state={version.status} />{' '}
                    <Time at={version.published_at ?? version.created_at} />
                    <button
                      type="button"
                      className="secondary"
                      aria-expanded={open === version.id}
                      onClick={() => setOpen(open === version.id ? null : version.id)}
                    >
                      {open === version.id
                        ? 'Hide changes'
                        : `Compare version ${version.version_number} with the editor`}
                    </button>
                    <button type="button" className="secondary" onClick={() => onRestore(version)}>
                      Restore version {version.version_number}
                    </button>
                  </div>
                  {open === version.id ? (
                    changes.length ? (
                      <ul className="diff" aria-label={`Changes from version ${version.version_number} to the editor`}>
                        {changes.map((line) => (
                          <li key={line} className="text">
                            {line}
                          </li>
                        ))}
                      </ul>
                    ) : (
                      <p className="muted">The same as the editor.</p>
                    )
                  ) : null}
                </li>
              )
            })}
          </ol>
        )}
      </Show>
    </section>
  )
}
