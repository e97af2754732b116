// Talking to the agent from the editor: the text-chat API (its draft, else its published version), each reply with the
// node it came from, and what happened in the turn: transitions, tool calls, extracted values.
import { useId, useRef, useState, type FormEvent } from 'react'
import { api, ApiError } from '../api'
import { ErrorNote } from '../ui'
import type { Definition } from './graph'
import { WebCallPanel } from '../webcall/panel'

type ChatEvent = Record<string, any> & { type: string }
type Turn = {
  id: string
  status: string
  user_message: { text: string } | null
  assistant_message: { text: string; node_id: string | null } | null
  events: ChatEvent[]
}
type Session = {
  workflow_run_id: number
  revision: number
  is_completed: boolean
  gathered_context: Record<string, any>
  session_data: { status: string; turns: Turn[]; end_reason: string | null }
}

const show = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value))

/** One line per thing that happened in a turn, in order; streamed text and raw usage are left out by the server. */
function eventLine(event: ChatEvent, nodeName: (id: string) => string): string | null {
  switch (event.type) {
    case 'node_entered':
      return `→ entered ${event.node_name || nodeName(event.node_id)}`
    case 'transition':
      return `↪ transition ${event.function_name}: ${nodeName(event.from_node_id)} → ${nodeName(event.to_node_id)}`
    case 'tool_call':
      return `⚙ tool ${event.function_name}(${show(event.arguments)}) → ${show(event.result)}`
    case 'extraction':
      return `✎ extracted in ${nodeName(event.node_id)}: ${Object.entries(event.values ?? {})
        .map(([name, value]) => `${name} = ${show(value)}`)
        .join(', ')}`
    case 'warning':
      return `⚠ ${event.message}`
    case 'ended':
      return `■ the conversation ended (${event.reason})`
    default:
      return null
  }
}

/** What the conversation extracted so far, by variable name. */
function ExtractedValues({ values }: { values: Record<string, unknown> }) {
  if (Object.keys(values).length === 0) return null
  return (
    <dl className="key-values" aria-label="Extracted values">
      {Object.entries(values).map(([name, value]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>{show(value)}</dd>
        </div>
      ))}
    </dl>
  )
}

export function TestPanel({
  hidden,
  agentId,
  definition,
  variables,
  dirty,
}: {
  /** Collapsed: kept mounted, so a chat or call goes on while the canvas has the room. */
  hidden: boolean
  agentId: number
  definition: Definition
  variables: Record<string, string>
  dirty: boolean
}) {
  const [session, setSession] = useState<Session | null>(null)
  const [pending, setPending] = useState<string | null>(null)
  const [message, setMessage] = useState('')
  const [context, setContext] = useState(() => JSON.stringify(variables, null, 1))
  const [error, setError] = useState<Error | null>(null)
  const inputId = useId()
  const log = useRef<HTMLOListElement>(null)
  const base = `/api/v1/workflow/${agentId}/text-chat/sessions`
  const nodeName = (id: string) => String(definition.nodes.find((node) => node.id === id)?.data.name || id)

  const run = async (action: () => Promise<Session>) => {
    setError(null)
    try {
      setSession(await action())
    } catch (caught) {
      setError(caught as ApiError)
    } finally {
      setPending(null)
      log.current?.lastElementChild?.scrollIntoView({ block: 'nearest' })
    }
  }
  const start = () =>
    run(async () => {
      if (session && !session.is_completed)
        await api('POST', `${base}/${session.workflow_run_id}/end`).catch(() => null)
      let initialContext: unknown = {}
      try {
        initialContext = context.trim() ? JSON.parse(context) : {}
      } catch {
        throw new Error('The variables are not JSON: write an object such as {"first_name": "Ada"}.')
      }
      return api<Session>('POST', base, { initial_context: initialContext })
    })
  const send = (event: FormEvent) => {
    event.preventDefault()
    if (!session || !message.trim()) return
    const text = message.trim()
    setMessage('')
    setPending(text)
    void run(() =>
      api<Session>('POST', `${base}/${session.workflow_run_id}/messages`, {
        text,
        expected_revision: session.revision,
      }),
    )
  }
  return (
    <aside id="test-panel" className="test-panel card" aria-labelledby="test-panel-title" hidden={hidden}>
      <h2 id="test-panel-title">Test</h2>
      <section aria-label="Text chat">
        {dirty ? <p className="muted">The chat talks to the saved draft: save to try your latest changes.</p> : null}
        <details>
          <summary>Variables of the call</summary>
          <label htmlFor={`${inputId}-context`}>Initial context (JSON)</label>
          <textarea
            id={`${inputId}-context`}
            className="code"
            rows={4}
            value={context}
            onChange={(event) => setContext(event.target.value)}
          />
        </details>
        <button type="button" onClick={start}>
          {session ? 'Restart' : 'Start chat'}
        </button>
        <ErrorNote error={error} />
        {session ? (
          <>
            <ol className="chat" ref={log} aria-label="Conversation" aria-live="polite">
              {session.session_data.turns.map((turn) => (
                <ChatTurn key={turn.id} turn={turn} nodeName={nodeName} />
              ))}
              {pending !== null ? (
                <li className="chat-turn">
                  <p className="chat-user text">{pending}</p>
                  <p className="muted">The agent is answering…</p>
                </li>
              ) : null}
            </ol>
            <ExtractedValues values={session.gathered_context?.extracted_variables ?? {}} />
            {session.is_completed ? (
              <p className="muted" role="status">
                The conversation is over ({session.session_data.end_reason ?? 'ended'}). Restart to talk again.
              </p>
            ) : (
              <form className="chat-form" onSubmit={send}>
                <label htmlFor={inputId}>Your message</label>
                <input id={inputId} value={message} onChange={(event) => setMessage(event.target.value)} />
                <button type="submit" disabled={pending !== null || !message.trim()}>
                  Send
                </button>
              </form>
            )}
          </>
        ) : null}
      </section>
      <div className="webcall-slot">
        <WebCallPanel agentId={agentId} />
      </div>
    </aside>
  )
}

function ChatTurn({ turn, nodeName }: { turn: Turn; nodeName: (id: string) => string }) {
  const lines = turn.events.map((event) => eventLine(event, nodeName)).filter((line): line is string => line !== null)
  return (
    <li className="chat-turn" data-turn={turn.id}>
      {turn.user_message ? <p className="chat-user text">{turn.user_message.text}</p> : null}
      {lines.length ? (
        <ul className="chat-events">
          {lines.map((line, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: a finished turn's events are a fixed log with no id: its position is each line's identity
            <li key={index} className="text">
              {line}
            </li>
          ))}
        </ul>
      ) : null}
      {turn.assistant_message ? (
        <p className="chat-agent">
          <span className="chat-node">
            {turn.assistant_message.node_id ? nodeName(turn.assistant_message.node_id) : 'Agent'}
          </span>
          <span className="text">{turn.assistant_message.text}</span>
        </p>
      ) : null}
      {turn.status === 'failed' ? <p className="error">This turn failed.</p> : null}
    </li>
  )
}
