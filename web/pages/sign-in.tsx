import { useState } from 'react'
import { api } from '../api'
import type { Who } from '../app'
import { ErrorNote, Field, useSubmit } from '../ui'

type Session = Who & { session: { csrf_token: string; expires_at: string } | null }

export function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [key, setKey] = useState('')
  const [busy, setBusy] = useState(false)
  const { error, submit } = useSubmit()
  const signIn = submit(async () => {
    setBusy(true)
    try {
      onSignedIn(await api<Session>('POST', '/api/v1/auth/session', { api_key: key.trim() }))
    } finally {
      setBusy(false)
    }
  })
  return (
    <main className="centered">
      <form className="card sign-in" onSubmit={signIn} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Sign in to Ringbase</h1>
        <p className="muted">
          Use an API key of your organization. On a new installation, the bootstrap key is printed once when the server
          first starts.
        </p>
        <Field
          label="API key"
          type="password"
          value={key}
          onChange={setKey}
          error={error}
          path={['api_key']}
          required
          autoComplete="current-password"
        />
        <ErrorNote error={error} />
        <button type="submit" disabled={busy || key.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  )
}
