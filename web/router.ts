// A hash router: the page is always `/`, the route is the fragment (`#/runs/4?agent=2`), so the server serves one page.
// A page with unsaved work guards it (useLeaveGuard): a new fragment then waits, the page still shown, until the admin
// stays (the browser goes back to the page's entry) or leaves.
import { useEffect, useRef, useSyncExternalStore } from 'react'

export type Route = { path: string[]; params: URLSearchParams }

function routeOf(hash: string): Route {
  const fragment = hash.replace(/^#/, '') || '/'
  const [path, search = ''] = fragment.split('?')
  return { path: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(search) }
}

/** A page's guard: what it says when the admin would leave it. */
type Guard = { message: string }

/**
 * The number of the history entry the browser is at. The router numbers each entry in `history.state` when it first
 * sees it (a new one after the entry it was made from), so that after Back or Forward it knows how far the browser
 * moved, and can move it back.
 */
function numberEntry(previous: number): number {
  const entry = history.state?.entry
  if (typeof entry === 'number') return entry
  history.replaceState({ ...history.state, entry: previous + 1 }, '')
  return previous + 1
}

const firstEntry = numberEntry(-1)
const router = {
  shown: routeOf(location.hash),
  shownHash: location.hash,
  shownEntry: firstEntry,
  /** The entry the browser is at: the shown one, unless a navigation waits for a guard's answer. */
  browserEntry: firstEntry,
  guards: [] as Guard[],
  /** The guard whose question waits for an answer. */
  waiting: null as Guard | null,
  /** What leaving does besides showing the fragment the browser is at (signing out: `whenLeaving`). */
  leavingAction: null as (() => void) | null,
  listeners: new Set<() => void>(),
}

function publish() {
  for (const listener of router.listeners) listener()
}

function subscribe(listener: () => void) {
  router.listeners.add(listener)
  return () => {
    router.listeners.delete(listener)
  }
}

/** Shows the route of the fragment the browser is at, and does what leaving was asked for. */
function show() {
  const action = router.leavingAction
  router.leavingAction = null
  router.waiting = null
  router.shownEntry = router.browserEntry
  if (location.hash !== router.shownHash) {
    router.shownHash = location.hash
    router.shown = routeOf(location.hash)
  }
  publish()
  action?.()
}

/** Back to the page shown: the browser moves to its entry; a fragment replaced in place is put back. */
function stay() {
  const distance = router.shownEntry - router.browserEntry
  router.waiting = null
  router.leavingAction = null
  if (distance) history.go(distance)
  else history.replaceState(history.state, '', `${location.pathname}${location.search}${router.shownHash}`)
  publish()
}

window.addEventListener('hashchange', () => {
  router.browserEntry = numberEntry(router.browserEntry)
  const guard = router.guards.at(-1)
  if (!guard || location.hash === router.shownHash) return show()
  router.waiting = guard
  publish()
})

export function useRoute(): Route {
  return useSyncExternalStore(subscribe, () => router.shown)
}

/** A navigation waiting for the admin's answer: the guard's message, and the two answers. */
export type Leaving = { message: string; stay: () => void; leave: () => void }

/**
 * While `active`, leaving the page asks first. A new fragment (a link, Back, Forward) waits, the page still shown:
 * the hook returns the waiting navigation, for the page to ask (null while none waits). Closing or reloading the tab
 * gets the browser's own prompt.
 */
export function useLeaveGuard(active: boolean, message: string): Leaving | null {
  const own = useRef<Guard | null>(null)
  useEffect(() => {
    if (!active) return
    const guard = { message }
    own.current = guard
    router.guards.push(guard)
    const warn = (event: BeforeUnloadEvent) => {
      event.preventDefault()
      // browsers before the prompt followed preventDefault() ask only when returnValue is set
      event.returnValue = message
    }
    window.addEventListener('beforeunload', warn)
    return () => {
      window.removeEventListener('beforeunload', warn)
      router.guards = router.guards.filter((item) => item !== guard)
      // nothing left to lose (saved meanwhile): the navigation goes on
      if (router.waiting === guard) show()
    }
  }, [active, message])
  const waiting = useSyncExternalStore(subscribe, () => router.waiting)
  return waiting && waiting === own.current ? { message: waiting.message, stay, leave: show } : null
}

/** Does `action` (signing out) at once, or, while a page guards unsaved work, once the admin chooses to leave it. */
export function whenLeaving(action: () => void): void {
  const guard = router.guards.at(-1)
  if (!guard) return action()
  router.leavingAction = action
  router.waiting = guard
  publish()
}

export const href = (path: string, params?: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params ?? {}))
    if (value !== undefined && value !== '') search.set(name, String(value))
  const text = search.toString()
  return `#${path}${text ? `?${text}` : ''}`
}

export const navigate = (path: string, params?: Record<string, string | number | undefined>) => {
  window.location.hash = href(path, params).slice(1)
}
