// The live events stream (GET /api/v1/events): one EventSource for the whole app, shared by every page that listens.
import { useEffect, useRef } from 'react'

export type LiveRun = {
  id: number
  workflow_id: number
  workflow_name: string
  name: string
  state: string
  mode: string
  call_type: string
  campaign_id: number | null
  caller_number: string | null
  called_number: string | null
  current_node_id: string | null
  disposition: string | null
  call_duration_seconds: number | null
  created_at: string
  started_at: string | null
  completed_at: string | null
}

export type LiveEvent =
  | { type: 'snapshot'; data: { calls: LiveRun[] } }
  | { type: 'run'; data: LiveRun }
  | { type: 'campaign'; data: { id: number; state: string } }

const listeners = new Set<(event: LiveEvent) => void>()
let source: EventSource | null = null

function connect() {
  if (source) return
  source = new EventSource('/api/v1/events')
  for (const type of ['snapshot', 'run', 'campaign'] as const) {
    source.addEventListener(type, (message) => {
      const event = { type, data: JSON.parse((message as MessageEvent).data) } as LiveEvent
      for (const listener of listeners) listener(event)
    })
  }
}

export function closeEvents() {
  source?.close()
  source = null
}

/**
 * Calls `onEvent` with every live event while the component is shown (a new snapshot on every reconnect), and
 * `catchUp` whenever the page may have missed some: the stream came back after a drop (a snapshot after its first),
 * or the browser came back online (a re-read that failed meanwhile is retried by no event).
 */
export function useLiveEvents(onEvent: (event: LiveEvent) => void, catchUp?: () => void) {
  const latest = useRef({ onEvent, catchUp })
  latest.current = { onEvent, catchUp }
  useEffect(() => {
    let snapshots = 0
    const listener = (event: LiveEvent) => {
      if (event.type === 'snapshot' && ++snapshots > 1) latest.current.catchUp?.()
      latest.current.onEvent(event)
    }
    const online = () => latest.current.catchUp?.()
    listeners.add(listener)
    window.addEventListener('online', online)
    if (source) {
      // A page opened after the stream started: ask for a snapshot of its own by reconnecting.
      closeEvents()
    }
    connect()
    return () => {
      listeners.delete(listener)
      window.removeEventListener('online', online)
    }
  }, [])
}
