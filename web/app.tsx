import { type ComponentType, lazy, type MouseEvent, Suspense, useEffect, useState } from 'react'
import { api, rememberCsrfToken, whenSignedOut } from './api'
import { closeEvents } from './events'
import { href, useRoute, whenLeaving } from './router'
import { SignIn } from './pages/sign-in'
import { Overview } from './pages/overview'
import { Loading } from './ui'

/**
 * Every page but the overview (where the console opens) is its own chunk, loaded when first shown: the first load
 * parses only the shell, the sign-in form and the overview. The agent editor (React Flow) is the largest of them.
 */
/** A page's component from its module, as a chunk loaded when first shown. */
function lazyPage<Name extends string>(load: () => Promise<Record<Name, ComponentType<any>>>, name: Name) {
  return lazy(() => load().then((module) => ({ default: module[name] })))
}

const RunList = lazyPage(() => import('./pages/runs'), 'RunList')
const RunPage = lazyPage(() => import('./pages/run'), 'RunPage')
const Keys = lazyPage(() => import('./pages/keys'), 'Keys')
const Campaigns = lazyPage(() => import('./pages/campaigns'), 'Campaigns')
const Telephony = lazyPage(() => import('./pages/telephony'), 'Telephony')
const Models = lazyPage(() => import('./pages/models'), 'Models')
const Usage = lazyPage(() => import('./pages/usage'), 'Usage')
const Tools = lazyPage(() => import('./pages/tools'), 'Tools')
const Knowledge = lazyPage(() => import('./pages/knowledge'), 'Knowledge')
const Recordings = lazyPage(() => import('./pages/recordings'), 'Recordings')
const WebCallPage = lazyPage(() => import('./webcall/panel'), 'WebCallPage')
const AgentList = lazyPage(() => import('./pages/agents'), 'AgentList')
const NewAgent = lazyPage(() => import('./pages/agents'), 'NewAgent')
const AgentEditor = lazyPage(() => import('./agents/editor'), 'AgentEditor')

export type Who = { organization_id: number; api_key_id: number; scope: 'admin' | 'trigger' }

const NAV: { path: string; label: string; adminOnly?: boolean }[] = [
  { path: '/', label: 'Overview' },
  { path: '/runs', label: 'Runs' },
  { path: '/agents', label: 'Agents', adminOnly: true },
  { path: '/campaigns', label: 'Campaigns', adminOnly: true },
  { path: '/telephony', label: 'Telephony', adminOnly: true },
  { path: '/models', label: 'Models', adminOnly: true },
  { path: '/tools', label: 'Tools', adminOnly: true },
  { path: '/knowledge', label: 'Knowledge', adminOnly: true },
  { path: '/recordings', label: 'Recordings', adminOnly: true },
  { path: '/usage', label: 'Usage', adminOnly: true },
  { path: '/keys', label: 'API keys', adminOnly: true },
]

/** The fragment is the route here: the skip link moves the focus to the page's content instead of following `#main`. */
function skipToContent(event: MouseEvent<HTMLAnchorElement>) {
  event.preventDefault()
  document.getElementById('main')?.focus()
}

export function App() {
  const [who, setWho] = useState<Who | null | undefined>(undefined)
  const route = useRoute()

  useEffect(() => {
    whenSignedOut(() => {
      closeEvents()
      rememberCsrfToken(null)
      setWho(null)
    })
    api<Who & { session: { csrf_token: string } | null }>('GET', '/api/v1/auth/session').then(
      (session) => {
        rememberCsrfToken(session.session?.csrf_token ?? null)
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
          rememberCsrfToken(session.session?.csrf_token ?? null)
          setWho(session)
        }}
      />
    )

  const signOut = async () => {
    await api('DELETE', '/api/v1/auth/session').catch(() => undefined)
    closeEvents()
    rememberCsrfToken(null)
    setWho(null)
  }
  const admin = who.scope === 'admin'
  const section = `/${route.path[0] ?? ''}`
  return (
    <div className="shell">
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link is a link to the content (assistive technology expects one); the hash router would take #main for a page, so it moves the focus itself */}
      <a className="skip" href="#main" onClick={skipToContent}>
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
          <button type="button" className="secondary" onClick={() => whenLeaving(signOut)}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<Loading what="the page" />}>
          <Page who={who} path={route.path} params={route.params} />
        </Suspense>
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
      if (admin && path[1]) return <AgentEditor id={Number(path[1])} />
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
    case 'knowledge':
      if (admin) return <Knowledge params={params} />
      break
    case 'recordings':
      if (admin) return <Recordings />
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
