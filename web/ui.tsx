// Small shared pieces: loading data, showing errors, fields with their 422 message, times in the browser's zone, a chart.
import { useCallback, useEffect, useId, useRef, useState, type FormEvent, type ReactNode } from 'react'
import { flushSync } from 'react-dom'
import { ApiError } from './api'
import { href, useLeaveGuard } from './router'

export type Loaded<T> = { data: T | null; error: Error | null; loading: boolean; reload: () => void }

/** Runs `load` now and whenever `deps` change or `reload` is called. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | null; error: Error | null; loading: boolean; of: string }>({
    data: null,
    error: null,
    loading: true,
    of: '',
  })
  const [generation, setGeneration] = useState(0)
  const subject = JSON.stringify(deps)
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what `load` reads (deps); generation is reload()'s
  useEffect(() => {
    let current = true
    setState((previous) => ({ ...previous, loading: true }))
    load().then(
      (data) => current && setState({ data, error: null, loading: false, of: subject }),
      // a re-read that fails (the network gone a moment) keeps what the page showed of the same thing, beside its error
      (error: Error) =>
        current &&
        setState((previous) => ({
          data: previous.of === subject ? previous.data : null,
          error,
          loading: false,
          of: subject,
        })),
    )
    return () => {
      current = false
    }
  }, [...deps, generation])
  const reload = useCallback(() => setGeneration((value) => value + 1), [])
  return { data: state.data, error: state.error, loading: state.loading, reload }
}

export function Page({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · Ringbase`
  }, [title])
  return (
    <section className="page" aria-labelledby="page-title">
      <header className="page-header">
        <h1 id="page-title">{title}</h1>
        {actions ? <div className="actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  )
}

/** An error's message; a 422's problems that fields show next to themselves are not repeated (render it after them). */
export function ErrorNote({ error }: { error: Error | null | undefined }) {
  if (!error) return null
  return (
    <p className="error" role="alert">
      {error instanceof ApiError ? error.messageBesideFields : error.message}
    </p>
  )
}

/** One fact of a `<dl className="facts">`: its label and what it is. */
export function Fact({ label, title, children }: { label: string; title?: string; children: ReactNode }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd title={title}>{children}</dd>
    </div>
  )
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  )
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children ? <div className="muted">{children}</div> : null}
    </div>
  )
}

/** Shows what a load gave, or its progress, or its error (above what an earlier load gave, when a re-read failed). */
export function Show<T>({
  loaded,
  what,
  children,
}: {
  loaded: Loaded<T>
  what: string
  children: (data: T) => ReactNode
}) {
  if (loaded.data === null) return loaded.error ? <ErrorNote error={loaded.error} /> : <Loading what={what} />
  return (
    <>
      <ErrorNote error={loaded.error} />
      {children(loaded.data)}
    </>
  )
}

type FieldProps = {
  label: string
  value: string
  onChange: (value: string) => void
  error?: ApiError | null
  /** The body field the API names in a 422 `loc` (['body', ...path]). */
  path?: (string | number)[]
  /** Other places the API may name it (a union's branch inserted in the `loc`, e.g. ['config', 'ari', 'ari_endpoint']). */
  otherPaths?: (string | number)[][]
  type?: string
  required?: boolean
  hint?: string
  options?: { value: string; label: string }[]
  autoComplete?: string
  /** A number input's bounds and step (the API's own, so the browser stops what it would refuse). */
  min?: number
  max?: number
  step?: number | 'any'
  /** A textarea of at most `maxLength` characters instead of one line. */
  multiline?: { maxLength: number }
}

/** A labelled input (or select) with the API's message for its field next to it. */
export function Field({
  label,
  value,
  onChange,
  error,
  path,
  otherPaths = [],
  type = 'text',
  required,
  hint,
  options,
  autoComplete,
  min,
  max,
  step,
  multiline,
}: FieldProps) {
  const { id, message, described, notes } = useFieldNotes(error, path, otherPaths, hint)
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {options ? (
        <select
          id={id}
          value={value}
          onChange={(event) => onChange(event.target.value)}
          aria-invalid={message ? true : undefined}
          aria-describedby={described}
          required={required}
        >
          {options.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
      ) : multiline ? (
        <textarea
          id={id}
          rows={4}
          maxLength={multiline.maxLength}
          value={value}
          onChange={(event) => onChange(event.target.value)}
          required={required}
          aria-invalid={message ? true : undefined}
          aria-describedby={described}
        />
      ) : (
        <input
          id={id}
          type={type}
          value={value}
          onChange={(event) => onChange(event.target.value)}
          required={required}
          aria-invalid={message ? true : undefined}
          aria-describedby={described}
          autoComplete={autoComplete}
          min={min}
          max={max}
          step={step}
        />
      )}
      {notes}
    </div>
  )
}

/** A field's id, its 422 message (at `path` or one of `otherPaths`) and hint, and what describes it. */
function useFieldNotes(
  error: ApiError | null | undefined,
  path: (string | number)[] | undefined,
  otherPaths: (string | number)[][],
  hint: string | undefined,
) {
  const id = useId()
  let message: string | undefined
  for (const where of [...(path ? [path] : []), ...otherPaths]) {
    message = error?.showAtField(...where)
    if (message) break
  }
  const described = [hint ? `${id}-hint` : '', message ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined
  const notes = (
    <>
      {hint ? (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      ) : null}
      {message ? (
        <small id={`${id}-error`} className="field-error">
          {message}
        </small>
      ) : null}
    </>
  )
  return { id, message, described, notes }
}

/** A labelled checkbox with the API's message for its field next to it. */
export function Checkbox({
  label,
  checked,
  onChange,
  error,
  path,
  hint,
}: Pick<FieldProps, 'label' | 'error' | 'path' | 'hint'> & { checked: boolean; onChange: (checked: boolean) => void }) {
  const { id, message, described, notes } = useFieldNotes(error, path, [], hint)
  return (
    <div className="field checkbox">
      <span>
        <input
          id={id}
          type="checkbox"
          checked={checked}
          onChange={(event) => onChange(event.target.checked)}
          aria-invalid={message ? true : undefined}
          aria-describedby={described}
        />{' '}
        <label htmlFor={id}>{label}</label>
      </span>
      {notes}
    </div>
  )
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })

/** A stored instant in the browser's time zone. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span className="muted">—</span>
  return <time dateTime={at}>{dateTime.format(new Date(at))}</time>
}

export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—'
  const whole = Math.max(0, Math.round(seconds))
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`
}

/** Seconds since `since`, ticking every second while shown. */
export function Elapsed({ since }: { since: string | null }) {
  const [now, setNow] = useState(Date.now())
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [])
  return <span>{since ? formatDuration((now - Date.parse(since)) / 1000) : '—'}</span>
}

/** Horizontal bars as inline SVG (drawn in the page's own units, so text keeps its size), labelled for screen readers too. */
export function BarChart({
  title,
  bars,
  unit = '',
}: {
  title: string
  bars: { label: string; value: number }[]
  unit?: string
}) {
  const max = Math.max(1, ...bars.map((bar) => bar.value))
  const rowHeight = 26
  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      <svg
        role="img"
        aria-label={`${title}: ${bars.map((bar) => `${bar.label} ${bar.value}${unit}`).join(', ')}`}
        width="100%"
        height={Math.max(1, bars.length) * rowHeight}
      >
        {bars.map((bar, index) => {
          const share = (bar.value / max) * 45
          return (
            <g key={bar.label}>
              <text x="0" y={index * rowHeight + 17} className="chart-label">
                {bar.label.length > 24 ? `${bar.label.slice(0, 23)}…` : bar.label}
              </text>
              <rect
                x="38%"
                y={index * rowHeight + 4}
                height="16"
                rx="3"
                width={`${Math.max(0.5, share)}%`}
                className="chart-bar"
              />
              <text
                x={`${39 + share}%`}
                y={index * rowHeight + 17}
                className="chart-value"
              >{`${bar.value}${unit}`}</text>
            </g>
          )
        })}
      </svg>
    </figure>
  )
}

export function StateBadge({ state }: { state: string }) {
  return <span className={`badge badge-${state.replace(/[^a-z_-]/gi, '')}`}>{state}</span>
}

/** A column's heading; `{ hidden }` is one only screen readers read (over a column of buttons). */
type Column = string | { hidden: string }

/** A table with its column headings; the rows are the children. */
export function Table({
  columns,
  caption,
  children,
  card = true,
}: {
  columns: Column[]
  caption?: string
  children: ReactNode
  card?: boolean
}) {
  return (
    <div className={card ? 'table-wrap card' : 'table-wrap'}>
      <table>
        {caption ? <caption className="muted">{caption}</caption> : null}
        <thead>
          <tr>
            {columns.map((column) =>
              typeof column === 'string' ? (
                <th scope="col" key={column}>
                  {column}
                </th>
              ) : (
                <th scope="col" key={column.hidden}>
                  <span className="visually-hidden">{column.hidden}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  )
}

/**
 * Keys for the rows of an editable list whose rows carry no id: a row keeps its key while others are added after it or
 * removed before it (call `removed(index)` with the removal), so React keeps each row's inputs and focus with its row.
 */
export function useRowKeys(count: number): { keys: number[]; removed: (index: number) => void } {
  const keys = useRef<number[]>([])
  const made = useRef(0)
  while (keys.current.length < count) keys.current.push(made.current++)
  keys.current.length = count
  return { keys: keys.current, removed: (index) => keys.current.splice(index, 1) }
}

/**
 * A form's submission: `submit(action)` is the form's onSubmit; it clears the last error, runs `action`, and keeps the
 * API's error, for the fields it names and the summary.
 */
export function useSubmit() {
  const [error, setError] = useState<ApiError | null>(null)
  const submit = (action: () => Promise<unknown>) => async (event?: FormEvent) => {
    event?.preventDefault()
    setError(null)
    try {
      await action()
    } catch (caught) {
      setError(caught instanceof ApiError ? caught : new ApiError(0, (caught as Error).message))
    }
  }
  return { error, setError, submit }
}

/** Opens the form that edits something in a list; `label` names it, e.g. "Edit configuration PBX". */
export function EditButton({ label, onClick }: { label: string; onClick: () => void }) {
  return (
    <button type="button" className="secondary" onClick={onClick} aria-label={label}>
      Edit
    </button>
  )
}

/**
 * The end of a form that saves: the API's error, "Saved." once it did, the submit button, and Close when the form
 * edits something shown above it.
 */
export function FormEnd({
  error,
  saved,
  submitLabel,
  onClose,
}: {
  error: Error | null
  saved: boolean
  submitLabel: string
  onClose?: () => void
}) {
  return (
    <>
      <ErrorNote error={error} />
      {saved ? (
        <p role="status" className="ok">
          Saved.
        </p>
      ) : null}
      <button type="submit">{submitLabel}</button>
      {onClose ? (
        <button type="button" className="secondary" onClick={onClose}>
          Close
        </button>
      ) : null}
    </>
  )
}

/** Where what a picker offers is managed: the page, its link's text, and what the picker says when it offers nothing. */
export type Managed = { page: string; link: string; none: string }

/** Where a picker of recordings sends the admin to add one. */
export const RECORDINGS_MANAGED: Managed = {
  page: '/recordings',
  link: 'Add a recording',
  none: 'No recording in this organization yet.',
}

/** The link beside a picker to the page where what it offers is added; when it offers nothing, it says so first. */
export function ManageLink({ where, empty }: { where: Managed; empty: boolean }) {
  return (
    <small className="manage-link">
      {empty ? `${where.none} ` : null}
      <a href={href(where.page)}>{where.link}</a>
    </small>
  )
}

/** A destructive action asked twice, in the page (no browser dialog): the button, then its confirmation or "Keep it". */
export function ConfirmButton({
  label,
  confirmText,
  onConfirm,
  children,
}: {
  /** The button's accessible name, e.g. "Delete configuration PBX". */
  label: string
  confirmText: string
  onConfirm: () => void
  children: ReactNode
}) {
  const [asking, setAsking] = useState(false)
  if (!asking)
    return (
      <button type="button" className="secondary" onClick={() => setAsking(true)} aria-label={label}>
        {children}
      </button>
    )
  return (
    <>
      <button
        type="button"
        className="danger"
        onClick={() => {
          setAsking(false)
          onConfirm()
        }}
      >
        {confirmText}
      </button>
      <button type="button" className="secondary" onClick={() => setAsking(false)}>
        Keep it
      </button>
    </>
  )
}

/**
 * Whether a form's values differ from the ones it was opened with or last saved: what LeaveGuard guards. `markSaved()`
 * takes the values as they were sent; `markSaved(saved)` the values the form holds once its save emptied some (a
 * secret typed once, a new item's name). It takes effect at once (flushSync), so a navigation right after it, to the
 * item just created, is not asked about.
 */
export function useUnsaved(values: unknown): { unsaved: boolean; markSaved: (saved?: unknown) => void } {
  const current = JSON.stringify(values)
  const [baseline, setBaseline] = useState(current)
  const markSaved = (saved: unknown = values) => flushSync(() => setBaseline(JSON.stringify(saved)))
  return { unsaved: current !== baseline, markSaved }
}

/**
 * While `when` (unsaved work), leaving the page asks first (useLeaveGuard): a link, Back or Forward opens this dialog
 * with the focus on "Stay on this page"; Escape stays too. `message` says what leaving loses.
 */
export function LeaveGuard({ when, message }: { when: boolean; message: string }) {
  const leaving = useLeaveGuard(when, message)
  const dialog = useRef<HTMLDialogElement>(null)
  const id = useId()
  const asking = leaving !== null
  useEffect(() => {
    if (asking && !dialog.current?.open) dialog.current?.showModal()
    if (!asking) dialog.current?.close()
  }, [asking])
  // Escape closes it without a cancel event at times: a close while asked is staying
  return (
    <dialog ref={dialog} className="card leave-dialog" aria-labelledby={id} onClose={() => leaving?.stay()}>
      <h2 id={id}>Leave without saving?</h2>
      <p>{message}</p>
      <div className="dialog-actions">
        <button type="button" onClick={() => leaving?.stay()}>
          Stay on this page
        </button>
        <button type="button" className="danger" onClick={() => leaving?.leave()}>
          Leave without saving
        </button>
      </div>
    </dialog>
  )
}
