import { useEffect, useRef, useState } from 'react'
import { api } from '../api'
import { useLiveEvents } from '../events'
import { href } from '../router'
import { BarChart, Empty, Fact, formatDuration, type Loaded, Page, Show, StateBadge, Table, Time, useLoad } from '../ui'

type Turn = {
  role: 'user' | 'agent'
  text: string
  start_ms: number
  end_ms: number
  node_id: string
  interrupted: boolean
}

/** A download link of the run as a path on this server (the API builds it with the public URL, which may differ). */
const localLink = (url: string | null | undefined) => {
  if (!url) return null
  const parsed = new URL(url, window.location.origin)
  return `${parsed.pathname}${parsed.search}`
}

export function RunPage({ workflowId, runId }: { workflowId: number; runId: number }) {
  const loaded = useLoad(() => api('GET', `/api/v1/workflow/${workflowId}/runs/${runId}`), [workflowId, runId])
  const deliveries = useLoad(
    () => api<{ deliveries: Delivery[] }>('GET', `/api/v1/workflow/${workflowId}/runs/${runId}/webhook-deliveries`),
    [workflowId, runId],
  )
  const readAgain = () => {
    loaded.reload()
    deliveries.reload()
  }
  // Each webhook attempt is written on the run too (logs.webhook_deliveries), so its `run` events tell of them as well.
  useLiveEvents((event) => {
    if (event.type === 'run' && event.data.id === runId) readAgain()
  }, readAgain)
  const audio = useRef<HTMLAudioElement>(null)
  const seek = (ms: number) => {
    if (!audio.current) return
    audio.current.currentTime = ms / 1000
    void audio.current.play().catch(() => undefined)
  }
  return (
    <Show loaded={loaded} what="the run">
      {(run: any) => {
        const transcript: Turn[] = Array.isArray(run.logs?.transcript) ? run.logs.transcript : []
        const recording = localLink(run.recording_public_url)
        const context = run.gathered_context ?? {}
        return (
          <Page title={run.name} actions={<a href={href('/runs')}>All runs</a>}>
            <RunFacts run={run} />
            <section className="card" aria-labelledby="recording-title">
              <h2 id="recording-title">Recording</h2>
              {recording ? (
                <>
                  {/* biome-ignore lint/a11y/useMediaCaption: browsers draw no captions for <audio>; the call's transcript is shown below, each turn a button that seeks the recording */}
                  <audio
                    ref={audio}
                    controls
                    preload="metadata"
                    src={recording}
                    aria-label="Call recording (caller and agent)"
                  />
                  {/* drawn again when the recording changes (a run read again once its call is stored) */}
                  <Waveform key={recording} workflowId={workflowId} runId={runId} />
                  <p className="downloads">
                    <a href={recording} download>
                      Download the recording
                    </a>
                    {run.transcript_public_url ? (
                      <a href={localLink(run.transcript_public_url)!} download>
                        Download the transcript
                      </a>
                    ) : null}
                  </p>
                </>
              ) : (
                <Empty title="No recording for this run." />
              )}
            </section>
            <section className="card" aria-labelledby="transcript-title">
              <h2 id="transcript-title">Transcript</h2>
              {transcript.length === 0 ? (
                <Empty title="Nothing was said." />
              ) : (
                <ol className="transcript">
                  {transcript.map((turn, index) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: a stored transcript's turns have no id (two may start together) and never move: its position is each turn's identity
                    <li key={index} className={`turn turn-${turn.role}`}>
                      {index > 0 && transcript[index - 1].node_id !== turn.node_id ? (
                        <p className="node-change">
                          Moved to node <code>{turn.node_id}</code>
                        </p>
                      ) : null}
                      <button
                        type="button"
                        className="link"
                        onClick={() => seek(turn.start_ms)}
                        aria-label={`Play from ${formatDuration(turn.start_ms / 1000)}`}
                      >
                        {formatDuration(turn.start_ms / 1000)}
                      </button>
                      <span className="speaker">{turn.role === 'user' ? 'Caller' : 'Agent'}</span>
                      <span className="text">{turn.text}</span>
                      {turn.interrupted ? <span className="badge badge-warning">interrupted</span> : null}
                    </li>
                  ))}
                </ol>
              )}
            </section>
            <LatencyChart transcript={transcript} />
            <section className="card" aria-labelledby="variables-title">
              <h2 id="variables-title">Extracted variables</h2>
              <KeyValues values={context.extracted_variables ?? {}} empty="No variable was extracted." />
            </section>
            <section className="card" aria-labelledby="tools-title">
              <h2 id="tools-title">Tool calls</h2>
              {Array.isArray(run.logs?.tool_calls) && run.logs.tool_calls.length ? (
                <ol>
                  {run.logs.tool_calls.map((call: any, index: number) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: a stored run's tool calls have no id (the same tool may be called alike twice) and never move
                    <li key={index}>
                      <code>{String(call.name ?? call.tool ?? 'tool')}</code>{' '}
                      <span className="muted">{JSON.stringify(call.result ?? call.error ?? '')}</span>
                    </li>
                  ))}
                </ol>
              ) : (
                <Empty title="No tool was called." />
              )}
            </section>
            <QaResults annotations={run.annotations ?? {}} />
            <WebhookDeliveries loaded={deliveries} />
            <section className="card" aria-labelledby="usage-title">
              <h2 id="usage-title">Usage</h2>
              <UsageTable usage={run.usage_info ?? {}} />
            </section>
          </Page>
        )
      }}
    </Show>
  )
}

/** What kind of run it was, how it went and what it cost. */
function RunFacts({ run }: { run: any }) {
  const context = run.gathered_context ?? {}
  return (
    <dl className="facts card">
      <Fact label="Agent">{run.workflow_name}</Fact>
      <Fact label="State">
        <StateBadge state={run.is_completed ? 'completed' : 'in progress'} />
      </Fact>
      <Fact label="Started">
        <Time at={run.created_at} />
      </Fact>
      <Fact label="Direction">{run.call_type}</Fact>
      <Fact label="Channel">{run.mode}</Fact>
      <Fact label="Disposition">{context.mapped_call_disposition ?? '—'}</Fact>
      <Fact label="Duration">{formatDuration(run.usage_info?.call_duration_seconds)}</Fact>
      <Fact label="Cost">
        {typeof run.cost_info?.charge_usd === 'number' ? `$${run.cost_info.charge_usd.toFixed(4)}` : '—'}
      </Fact>
      <Fact label="Tags">
        {Array.isArray(run.annotations?.tags) && run.annotations.tags.length ? run.annotations.tags.join(', ') : '—'}
      </Fact>
    </dl>
  )
}

function KeyValues({ values, empty }: { values: Record<string, unknown>; empty: string }) {
  const entries = Object.entries(values)
  if (entries.length === 0) return <Empty title={empty} />
  return (
    <dl className="key-values">
      {entries.map(([name, value]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>{typeof value === 'string' ? value : JSON.stringify(value)}</dd>
        </div>
      ))}
    </dl>
  )
}

/** What each service of `usage_info` is called, and the unit of its one number per model (an LLM's are named counts). */
const USAGE_SERVICES = new Map<string, { label: string; unit?: string }>([
  ['llm', { label: 'Language model' }],
  ['stt', { label: 'Speech recognition', unit: 'seconds of audio' }],
  ['tts', { label: 'Speech synthesis', unit: 'characters' }],
  ['embeddings', { label: 'Embeddings (knowledge base)', unit: 'tokens' }],
])

/** An LLM's counts (src/models/usage.ts); others are shown by their own name. */
const TOKEN_COUNTS = new Map([
  ['prompt_tokens', 'input tokens'],
  ['completion_tokens', 'output tokens'],
  ['total_tokens', 'tokens in all'],
  ['audio_prompt_tokens', 'audio input tokens'],
  ['audio_completion_tokens', 'audio output tokens'],
])

/** The QA review's tokens stand under this name where other keys have the provider (src/runs/qa.ts). */
const QA_USAGE = 'QAAnalysis'
/** The voice built into the binary stands under this provider (src/voice/flite.ts). */
const BUILT_IN = 'builtin'
const KEY_SEPARATOR = '|||'

const number = new Intl.NumberFormat()

type UsageRow = { id: string; service: string; provider: string; model: string; used: string }

/** An amount as text: a number with its unit, named counts one after the other, anything else as JSON. */
function usedText(value: unknown, unit?: string): string {
  if (typeof value === 'number') return unit ? `${number.format(value)} ${unit}` : number.format(value)
  if (value !== null && typeof value === 'object' && !Array.isArray(value))
    return Object.entries(value)
      .map(([name, amount]) =>
        typeof amount === 'number'
          ? usedText(amount, TOKEN_COUNTS.get(name) ?? name.replaceAll('_', ' '))
          : `${name}: ${JSON.stringify(amount)}`,
      )
      .join(', ')
  return typeof value === 'string' ? value : String(JSON.stringify(value))
}

/**
 * One row per service and model used: `usage_info.<service>["<provider>|||<model>"]` (src/models/usage.ts), the QA
 * review's as `llm["QAAnalysis|||<model>"]`. A service that used nothing (`{}`) gives none; the call's duration is
 * among the run's facts.
 */
function usageRows(usage: Record<string, unknown>): UsageRow[] {
  // The stored order puts synthesis before recognition: known services go in USAGE_SERVICES' order, others after.
  const order = [...USAGE_SERVICES.keys()]
  const rank = (service: string) => (order.includes(service) ? order.indexOf(service) : order.length)
  const services = Object.entries(usage).sort(([one], [other]) => rank(one) - rank(other))
  return services.flatMap(([service, used]): UsageRow[] => {
    if (service === 'call_duration_seconds') return []
    const { label, unit } = USAGE_SERVICES.get(service) ?? { label: service }
    if (used === null || typeof used !== 'object' || Array.isArray(used))
      return [{ id: service, service: label, provider: '—', model: '—', used: usedText(used, unit) }]
    return Object.entries(used).map(([key, amount]) => {
      const separator = key.indexOf(KEY_SEPARATOR)
      const provider = separator >= 0 ? key.slice(0, separator) : '—'
      const review = service === 'llm' && provider === QA_USAGE
      return {
        id: `${service} ${key}`,
        service: review ? `${label} (QA review)` : label,
        provider: review ? '—' : provider === BUILT_IN ? 'built-in' : provider,
        model: separator >= 0 ? key.slice(separator + KEY_SEPARATOR.length) : key,
        used: usedText(amount, unit),
      }
    })
  })
}

/** What the run used of each model, in a table. */
function UsageTable({ usage }: { usage: Record<string, unknown> }) {
  const rows = usageRows(usage)
  if (rows.length === 0) return <Empty title="No usage recorded." />
  return (
    <Table card={false} columns={['Service', 'Provider', 'Model', 'Used']}>
      {rows.map((row) => (
        <tr key={row.id}>
          <td>{row.service}</td>
          <td>{row.provider}</td>
          <td>{row.model}</td>
          <td>{row.used}</td>
        </tr>
      ))}
    </Table>
  )
}

type QaNodeResult = {
  node_name?: string
  score?: number
  overall_sentiment?: string
  tags?: string[]
  summary?: string
}
type QaAnnotation = {
  model?: string
  node_results?: Record<string, QaNodeResult>
  skipped?: boolean
  reason?: string
  error?: string
}

/** Each QA node's review (`annotations.qa_<node>`): per conversation node reviewed, its score, sentiment, tags, summary. */
function QaResults({ annotations }: { annotations: Record<string, unknown> }) {
  const reviews = Object.entries(annotations).filter(([key]) => key.startsWith('qa_')) as [string, QaAnnotation][]
  return (
    <section className="card" aria-labelledby="qa-title">
      <h2 id="qa-title">QA results</h2>
      {reviews.length === 0 ? (
        <Empty title="No QA review for this run.">Add a QA node to the agent to have its calls reviewed.</Empty>
      ) : (
        reviews.map(([key, review]) => (
          <div key={key} className="qa-review">
            <h3>
              QA node <code>{key.slice(3)}</code>
              {review.model ? <span className="muted"> · {review.model}</span> : null}
            </h3>
            {review.skipped ? <p className="muted">Skipped: {review.reason}</p> : null}
            {review.error ? <p className="error">Not reviewed: {review.error}</p> : null}
            {review.node_results ? (
              <Table card={false} columns={['Node', 'Score', 'Sentiment', 'Tags', 'Summary']}>
                {Object.entries(review.node_results).map(([nodeId, result]) => (
                  <tr key={nodeId}>
                    <td>{result.node_name ?? nodeId}</td>
                    <td>{result.score ?? '—'}</td>
                    <td>{result.overall_sentiment ?? '—'}</td>
                    <td>{Array.isArray(result.tags) && result.tags.length ? result.tags.join(', ') : '—'}</td>
                    <td>{result.summary ?? '—'}</td>
                  </tr>
                ))}
              </Table>
            ) : null}
          </div>
        ))
      )}
    </section>
  )
}

type DeliveryAttempt = { attempt: number; at: string; status_code: number | null; outcome: string; error?: string }
type Delivery = {
  delivery_id: string
  node_name: string
  state: string
  attempts: number
  next_attempt_at: string | null
  last_error: string | null
  attempt_log: DeliveryAttempt[]
}

/** The run's webhook deliveries, with each attempt (GET …/runs/{id}/webhook-deliveries). */
function WebhookDeliveries({ loaded }: { loaded: Loaded<{ deliveries: Delivery[] }> }) {
  return (
    <section className="card" aria-labelledby="webhooks-title">
      <h2 id="webhooks-title">Webhook deliveries</h2>
      <Show loaded={loaded} what="webhook deliveries">
        {({ deliveries }) =>
          deliveries.length === 0 ? (
            <Empty title="No webhook for this run.">A webhook node in the agent sends each finished run out.</Empty>
          ) : (
            <Table card={false} columns={['Webhook', 'State', 'Attempts', 'Next attempt', 'Each attempt']}>
              {deliveries.map((delivery) => (
                <tr key={delivery.delivery_id} data-delivery-id={delivery.delivery_id}>
                  <td>{delivery.node_name}</td>
                  <td>
                    <StateBadge state={delivery.state} />
                    {delivery.last_error ? <span className="muted"> {delivery.last_error}</span> : null}
                  </td>
                  <td>{delivery.attempts}</td>
                  <td>
                    <Time at={delivery.next_attempt_at} />
                  </td>
                  <td>
                    <ol className="plain">
                      {delivery.attempt_log.map((entry) => (
                        <li key={entry.attempt}>
                          #{entry.attempt} <Time at={entry.at} />: {entry.outcome}
                          {entry.status_code !== null ? ` (HTTP ${entry.status_code})` : ''}
                          {entry.error ? ` ${entry.error}` : ''}
                        </li>
                      ))}
                    </ol>
                  </td>
                </tr>
              ))}
            </Table>
          )
        }
      </Show>
    </section>
  )
}

/** Seconds from the end of each caller turn to the start of the agent's answer. */
function LatencyChart({ transcript }: { transcript: Turn[] }) {
  const bars = transcript.flatMap((turn, index) => {
    const next = transcript[index + 1]
    return turn.role === 'user' && next?.role === 'agent'
      ? [{ label: `Turn ${index + 2}`, value: Math.max(0, Math.round(next.start_ms - turn.end_ms) / 1000) }]
      : []
  })
  if (bars.length === 0) return null
  return (
    <section className="card">
      <BarChart title="Response latency per turn" bars={bars} unit=" s" />
    </section>
  )
}

/** A track's peaks scaled so its loudest column is 1 (a quiet line still shows its shape); silence stays flat. */
function scaled(track: number[]): number[] {
  const loudest = Math.max(0, ...track)
  return loudest > 0 ? track.map((peak) => peak / loudest) : track
}

const WAVE_COLUMNS = 300

/**
 * The two tracks of the stereo recording (caller left, agent right) as outlines; silence is the flat middle line. The
 * server reads the peaks from the recording (`recording-peaks`): the file itself is not downloaded to draw them.
 */
function Waveform({ workflowId, runId }: { workflowId: number; runId: number }) {
  const [peaks, setPeaks] = useState<number[][] | null>(null)
  useEffect(() => {
    let current = true
    api<{ tracks: number[][] }>(
      'GET',
      `/api/v1/workflow/${workflowId}/runs/${runId}/recording-peaks?columns=${WAVE_COLUMNS}`,
    )
      .then(({ tracks }) => {
        if (current) setPeaks(tracks.slice(0, 2).map(scaled))
      })
      .catch(() => undefined)
    return () => {
      current = false
    }
  }, [workflowId, runId])
  if (!peaks) return null
  return (
    <div className="waveform">
      {peaks.map((track, channel) => {
        const speaker = channel === 0 ? 'Caller' : 'Agent'
        const silent = track.every((peak) => peak === 0)
        return (
          <div key={speaker} className="track">
            <span className="muted">{speaker}</span>
            <svg
              role="img"
              aria-label={`${speaker} track waveform${silent ? ': silent' : ''}`}
              viewBox={`0 0 ${WAVE_COLUMNS} 40`}
              preserveAspectRatio="none"
            >
              <line className="wave-axis" x1="0" y1="20" x2={WAVE_COLUMNS} y2="20" />
              <path
                className={`wave wave-${channel}`}
                d={track
                  .flatMap((peak, x) => (peak > 0 ? [`M${x + 0.5} ${20 - peak * 19}V${20 + peak * 19}`] : []))
                  .join('')}
              />
            </svg>
          </div>
        )
      })}
    </div>
  )
}
