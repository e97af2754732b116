import { lazy, Suspense, useEffect, useState } from 'react'
import { api, useCsrfToken, whenSignedOut } from './api'
import { closeEvents } from './events'
import { href, useRoute } from './router'
import { SignIn } from './pages/sign-in'
import { Overview } from './pages/overview'
import { RunList } from './pages/runs'
import { RunPage } from './pages/run'
import { Keys } from './pages/keys'
import { Campaigns } from './pages/campaigns'
import { Telephony } from './pages/telephony'
import { Models } from './pages/models'
import { Usage } from './pages/usage'
import { Tools } from './pages/tools'
import { WebCallPage } from './webcall/panel'
import { AgentList, NewAgent } from './pages/agents'
import { Loading } from './ui'

/** The agent editor (React Flow) is its own chunk, loaded when an agent is opened. */
const AgentEditor = lazy(() => import('./agents/editor').then((module) => ({ default: module.AgentEditor })))

export type Who = { organization_id: number; api_key_id: number; scope: 'admin' | 'trigger' }

const NAV: { path: string; label: string; adminOnly?: boolean }[] = [
  { path: '/', label: 'Overview' },
  { path: '/runs', label: 'Runs' },
  { path: '/agents', label: 'Agents', adminOnly: true },
  { path: '/campaigns', label: 'Campaigns', adminOnly: true },
  { path: '/telephony', label: 'Telephony', adminOnly: true },
  { path: '/models', label: 'Models', adminOnly: true },
  { path: '/tools', label: 'Tools', adminOnly: true },
  { path: '/usage', label: 'Usage', adminOnly: true },
  { path: '/keys', label: 'API keys', adminOnly: true },
]

export function App() {
  const [who, setWho] = useState<Who | null | undefined>(undefined)
  const route = useRoute()

  useEffect(() => {
    whenSignedOut(() => {
      closeEvents()
      useCsrfToken(null)
      setWho(null)
    })
    api<Who & { session: { csrf_token: string } | null }>('GET', '/api/v1/auth/session').then(
      (session) => {
        useCsrfToken(session.session?.csrf_token ?? null)
        setWho(session)
      },
      () => setWho(null),
    )
  }, [])

  if (who === undefined)
    return (
      <main className="centered">
        <Loading what="the console" />
      </main>
    )
  if (who === null)
    return (
      <SignIn
        onSignedIn={(session) => {
          useCsrfToken(session.session?.csrf_token ?? null)
          setWho(session)
        }}
      />
    )

  const signOut = async () => {
    await api('DELETE', '/api/v1/auth/session').catch(() => undefined)
    closeEvents()
    useCsrfToken(null)
    setWho(null)
  }
  const admin = who.scope === 'admin'
  const section = `/${route.path[0] ?? ''}`
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <a className="brand" href="#/">
          Ringbase
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.filter((item) => admin || !item.adminOnly).map((item) => (
              <li key={item.path}>
                <a href={href(item.path)} aria-current={section === item.path ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <span className="muted">{admin ? 'Admin' : 'Trigger key'}</span>
          <button type="button" className="secondary" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Page who={who} path={route.path} params={route.params} />
      </main>
    </div>
  )
}

function Page({ who, path, params }: { who: Who; path: string[]; params: URLSearchParams }) {
  const admin = who.scope === 'admin'
  switch (path[0]) {
    case undefined:
      return <Overview admin={admin} />
    case 'runs':
      return path[1] && path[2] ? (
        <RunPage workflowId={Number(path[1])} runId={Number(path[2])} />
      ) : (
        <RunList params={params} admin={admin} />
      )
    case 'agents':
      if (admin && path[1] === 'new') return <NewAgent />
      if (admin && path[1])
        return (
          <Suspense fallback={<Loading what="the editor" />}>
            <AgentEditor id={Number(path[1])} />
          </Suspense>
        )
      if (admin) return <AgentList params={params} />
      break
    case 'campaigns':
      if (admin) return <Campaigns path={path} />
      break
    case 'telephony':
      if (admin) return <Telephony params={params} />
      break
    case 'models':
      if (admin) return <Models />
      break
    case 'tools':
      if (admin) return <Tools />
      break
    case 'usage':
      if (admin) return <Usage />
      break
    case 'keys':
      if (admin) return <Keys currentKeyId={who.api_key_id} />
      break
    case 'call':
      if (admin && Number(path[1]) > 0) return <WebCallPage agentId={Number(path[1])} />
      break
  }
  return (
    <p role="alert">
      This page does not exist, or this key may not see it. <a href="#/">Back to the overview</a>
    </p>
  )
}
