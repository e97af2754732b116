// Talk to an agent from the browser: a web call (start/stop, microphone level, live transcript, the agent's audio
// played back) and "Call my phone", a test call through the organization's default telephony configuration. Other
// pages embed <WebCallPanel agentId={…} />; #/call/<agent id> shows it alone.
import { useEffect, useRef, useState } from 'react'
import { api } from '../api'
import { href } from '../router'
import { ErrorNote, Field, Page, useLoad, useSubmit } from '../ui'
import { startWebCall, type TranscriptLine, type WebCall } from './web-call'

type CallState = 'idle' | 'connecting' | 'live' | 'ended'

export function WebCallPanel({ agentId }: { agentId: number }) {
  const [state, setState] = useState<CallState>('idle')
  const [note, setNote] = useState<string | null>(null)
  const [error, setError] = useState<Error | null>(null)
  const [level, setLevel] = useState(0)
  const [lines, setLines] = useState<(TranscriptLine & { id: number })[]>([])
  const [audio, setAudio] = useState({ frames: 0, playedSamples: 0 })
  const [runId, setRunId] = useState<number | null>(null)
  const call = useRef<WebCall | null>(null)

  useEffect(() => () => call.current?.hangUp(), [])

  const start = async () => {
    setError(null)
    setNote(null)
    setLines([])
    setAudio({ frames: 0, playedSamples: 0 })
    try {
      call.current = await startWebCall(agentId, {
        onState: (next, detail) => {
          setState(next)
          if (detail) setNote(detail)
          if (next === 'ended') setLevel(0)
        },
        onLevel: setLevel,
        onTranscript: (line) => setLines((previous) => [...previous, { ...line, id: previous.length }]),
        onAgentAudio: setAudio,
      })
      setRunId(call.current.runId)
    } catch (caught) {
      setState('idle')
      setError(caught as Error)
    }
  }
  const calling = state === 'connecting' || state === 'live'

  return (
    <section className="web-call" aria-labelledby="web-call-title" data-state={state}>
      <h2 id="web-call-title">Talk to the agent</h2>
      <p className="muted">
        Use a headset: on speakers the browser's echo cancellation keeps the agent from hearing itself, but loud
        playback can still reach the microphone and cut the agent off.
      </p>
      <div className="actions">
        {calling ? (
          <button type="button" onClick={() => call.current?.hangUp()}>
            End call
          </button>
        ) : (
          <button type="button" onClick={start}>
            Start web call
          </button>
        )}
        <meter
          aria-label="Microphone level"
          min={0}
          max={1}
          value={Math.min(1, level * 4)}
          data-level={level.toFixed(3)}
        />
        <span role="status" className="muted">
          {state === 'connecting' ? 'Connecting…' : state === 'live' ? 'Live' : (note ?? '')}
        </span>
      </div>
      <ErrorNote error={error} />
      <p
        className="muted"
        data-testid="agent-audio"
        data-frames={audio.frames}
        data-played-samples={audio.playedSamples}
      >
        Agent audio: {(audio.playedSamples / 16000).toFixed(1)} s played
      </p>
      <ol className="transcript" aria-label="Live transcript" aria-live="polite">
        {lines.map((line) => (
          <li key={line.id} data-role={line.role}>
            <strong>{line.role === 'agent' ? 'Agent' : 'You'}:</strong> {line.text}
          </li>
        ))}
      </ol>
      {runId !== null && state === 'ended' ? (
        <p>
          <a href={href(`/runs/${agentId}/${runId}`)}>Open the run</a> (transcript and recording)
        </p>
      ) : null}
      <CallMyPhone agentId={agentId} />
    </section>
  )
}

/** A test call to a phone through the default telephony configuration (the public trigger's test path). */
function CallMyPhone({ agentId }: { agentId: number }) {
  const [phone, setPhone] = useState('')
  const [placed, setPlaced] = useState<{ workflow_run_id: number } | null>(null)
  const { error, submit } = useSubmit()
  const call = async () => {
    setPlaced(null)
    const agent = await api<{ workflow_uuid: string }>('GET', `/api/v1/workflow/fetch/${agentId}`)
    setPlaced(await api('POST', `/api/v1/public/agent/test/workflow/${agent.workflow_uuid}`, { phone_number: phone }))
  }
  return (
    <form className="call-my-phone" onSubmit={submit(call)}>
      <Field
        label="Your phone number"
        value={phone}
        onChange={setPhone}
        error={error}
        path={['phone_number']}
        type="tel"
        required
        autoComplete="tel"
      />
      <button type="submit">Call my phone</button>
      {error && !error.fieldMessage('phone_number') ? <ErrorNote error={error} /> : null}
      {placed ? (
        <p role="status">
          Calling… <a href={href(`/runs/${agentId}/${placed.workflow_run_id}`)}>Follow the run</a>
        </p>
      ) : null}
    </form>
  )
}

/** #/call/<agent id>: the panel on a page of its own, named after the agent it calls. */
export function WebCallPage({ agentId }: { agentId: number }) {
  const agent = useLoad(() => api<{ name: string }>('GET', `/api/v1/workflow/fetch/${agentId}`), [agentId])
  return (
    <Page title={agent.data ? `Web call with ${agent.data.name}` : 'Web call'}>
      <ErrorNote error={agent.error} />
      <WebCallPanel agentId={agentId} />
    </Page>
  )
}
