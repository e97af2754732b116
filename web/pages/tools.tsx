import { useState } from 'react'
import { api } from '../api'
import { Empty, ErrorNote, Field, Page, Show, StateBadge, Table, Time, useLoad, useSubmit } from '../ui'

/** The organization's tools (what agents may call) and credentials (secrets never shown back). */
export function Tools() {
  const tools = useLoad(() => api<any[]>('GET', '/api/v1/tools/?status=active,archived'), [])
  const credentials = useLoad(() => api<any[]>('GET', '/api/v1/credentials'), [])
  return (
    <Page title="Tools and credentials">
      <section className="card" aria-labelledby="tools-title">
        <h2 id="tools-title">Tools</h2>
        <Show loaded={tools} what="tools">
          {(list) =>
            list.length === 0 ? (
              <Empty title="No tool yet.">
                Create tools with POST /api/v1/tools/ (HTTP requests, ending or transferring the call, a calculator);
                agents then call them by name.
              </Empty>
            ) : (
              <Table card={false} columns={['Name', 'Kind', 'Function', 'State', 'Updated']}>
                {list.map((tool) => (
                  <tr key={tool.tool_uuid}>
                    <td>{tool.name}</td>
                    <td>{tool.definition?.type ?? tool.category}</td>
                    <td>
                      <code>{tool.function_name}</code>
                    </td>
                    <td>
                      <StateBadge state={tool.status} />
                    </td>
                    <td>
                      <Time at={tool.updated_at} />
                    </td>
                  </tr>
                ))}
              </Table>
            )
          }
        </Show>
      </section>
      <section className="card" aria-labelledby="credentials-title">
        <h2 id="credentials-title">Credentials</h2>
        <Show loaded={credentials} what="credentials">
          {(list) =>
            list.length === 0 ? (
              <Empty title="No credential yet.">Add the token an HTTP tool or webhook sends, below.</Empty>
            ) : (
              <ul className="plain">
                {list.map((credential) => (
                  <li key={credential.uuid}>
                    <strong>{credential.name}</strong> <span className="muted">{credential.credential_type}</span>
                  </li>
                ))}
              </ul>
            )
          }
        </Show>
        <NewCredential onCreated={credentials.reload} />
      </section>
    </Page>
  )
}

function NewCredential({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('')
  const [token, setToken] = useState('')
  const { error, submit } = useSubmit()
  const create = submit(async () => {
    await api('POST', '/api/v1/credentials', { name, credential_type: 'bearer_token', credential_data: { token } })
    setName('')
    setToken('')
    onCreated()
  })
  return (
    <form className="inline-form" onSubmit={create} aria-labelledby="new-credential-title">
      <h3 id="new-credential-title">Add a bearer token</h3>
      <Field label="Credential name" value={name} onChange={setName} error={error} path={['name']} required />
      <Field
        label="Token"
        type="password"
        value={token}
        onChange={setToken}
        error={error}
        path={['credential_data', 'token']}
        required
        autoComplete="new-password"
      />
      <ErrorNote error={error} />
      <button type="submit">Add credential</button>
    </form>
  )
}
