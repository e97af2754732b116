import { useState } from 'react'
import { api } from '../api'
import {
  ConfirmButton,
  Empty,
  ErrorNote,
  Field,
  LeaveGuard,
  Page,
  Show,
  StateBadge,
  Table,
  Time,
  useLoad,
  useSubmit,
  useUnsaved,
} from '../ui'

type Key = {
  id: number
  name: string
  key_prefix: string
  scope: string
  is_active: boolean
  created_at: string
  last_used_at: string | null
  archived_at: string | null
}

export function Keys({ currentKeyId }: { currentKeyId: number }) {
  const keys = useLoad(() => api<Key[]>('GET', '/api/v1/user/api-keys?include_archived=true'), [])
  const [name, setName] = useState('')
  const [scope, setScope] = useState('admin')
  const [created, setCreated] = useState<{ name: string; api_key: string } | null>(null)
  const { unsaved, markSaved } = useUnsaved([name, scope])
  const { error, submit } = useSubmit()
  const create = submit(async () => {
    setCreated(await api('POST', '/api/v1/user/api-keys', { name, scope }))
    setName('')
    // emptied for the next key, its scope kept
    markSaved(['', scope])
    keys.reload()
  })
  const change = (key: Key) =>
    submit(async () => {
      if (key.archived_at) await api('PUT', `/api/v1/user/api-keys/${key.id}/reactivate`)
      else await api('DELETE', `/api/v1/user/api-keys/${key.id}`)
      keys.reload()
    })
  return (
    <Page title="API keys">
      <form className="card inline-form" onSubmit={create} aria-labelledby="new-key-title">
        <h2 id="new-key-title">New key</h2>
        <LeaveGuard
          when={unsaved}
          message="The new key's form has changes that are not saved: leaving the page drops them."
        />
        <Field label="Name" value={name} onChange={setName} error={error} path={['name']} required />
        <Field
          label="Scope"
          value={scope}
          onChange={setScope}
          error={error}
          path={['scope']}
          options={[
            { value: 'admin', label: 'Admin (everything)' },
            { value: 'trigger', label: 'Trigger (start and read runs)' },
          ]}
        />
        <button type="submit">Create key</button>
      </form>
      <ErrorNote error={error} />
      {created ? (
        <div className="card notice" role="status">
          <p>
            Key <strong>{created.name}</strong> created. Copy it now: it is shown only this once.
          </p>
          <output className="secret" aria-label="The new API key">
            {created.api_key}
          </output>
          <button type="button" className="secondary" onClick={() => setCreated(null)}>
            I have copied it
          </button>
        </div>
      ) : null}
      <Show loaded={keys} what="keys">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No key yet." />
          ) : (
            <Table columns={['Name', 'Prefix', 'Scope', 'State', 'Created', 'Last used', { hidden: 'Actions' }]}>
              {list.map((key) => (
                <tr key={key.id}>
                  <td>
                    {key.name}
                    {key.id === currentKeyId ? <span className="muted"> (this session)</span> : null}
                  </td>
                  <td>
                    <code>{key.key_prefix}…</code>
                  </td>
                  <td>{key.scope}</td>
                  <td>
                    <StateBadge state={key.archived_at ? 'archived' : 'active'} />
                  </td>
                  <td>
                    <Time at={key.created_at} />
                  </td>
                  <td>
                    <Time at={key.last_used_at} />
                  </td>
                  <td>
                    <button
                      type="button"
                      className="secondary"
                      onClick={change(key)}
                      disabled={key.id === currentKeyId}
                      aria-label={`${key.archived_at ? 'Reactivate' : 'Revoke'} key ${key.name}`}
                    >
                      {key.archived_at ? 'Reactivate' : 'Revoke'}
                    </button>
                  </td>
                </tr>
              ))}
            </Table>
          )
        }
      </Show>
      <WebhookSigning />
    </Page>
  )
}

type SigningStatus = { configured: boolean; hint: string | null; created_at: string | null }

/** The secret webhook deliveries are signed with: created or rotated here, shown only once, then only its last 4. */
function WebhookSigning() {
  const status = useLoad(() => api<SigningStatus>('GET', '/api/v1/organizations/webhook-signing-secret'), [])
  const [created, setCreated] = useState<string | null>(null)
  const { error, submit } = useSubmit()
  const createSecret = submit(async () => {
    setCreated((await api<{ secret: string }>('POST', '/api/v1/organizations/webhook-signing-secret')).secret)
    status.reload()
  })
  return (
    <section className="card" aria-labelledby="signing-title">
      <h2 id="signing-title">Webhook signing secret</h2>
      <p className="muted">
        Webhook nodes' deliveries carry <code>X-Ringbase-Signature</code>, an HMAC-SHA256 of the body with this secret,
        so the receiver can tell they come from here.
      </p>
      <Show loaded={status} what="the signing secret">
        {(current) =>
          current.configured ? (
            <>
              <p>
                Deliveries are signed with the secret ending in <code>{current.hint}</code>, created{' '}
                <Time at={current.created_at} />.
              </p>
              <ConfirmButton
                label="Rotate the webhook signing secret"
                confirmText="Rotate: receivers need the new secret"
                onConfirm={createSecret}
              >
                Rotate
              </ConfirmButton>
            </>
          ) : (
            <>
              <p>Deliveries are not signed.</p>
              <button type="button" onClick={createSecret}>
                Create a signing secret
              </button>
            </>
          )
        }
      </Show>
      <ErrorNote error={error} />
      {created ? (
        <div className="notice" role="status">
          <p>Copy the secret now: it is shown only this once.</p>
          <output className="secret" aria-label="The new signing secret">
            {created}
          </output>
          <button type="button" className="secondary" onClick={() => setCreated(null)}>
            I have copied the secret
          </button>
        </div>
      ) : null}
    </section>
  )
}
