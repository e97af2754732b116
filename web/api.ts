// The console's only way to the server: the public API, with the browser session's cookie and its CSRF token.
import type { components } from './api-types'

export type Schemas = components['schemas']

export type FieldError = { loc: (string | number)[]; msg: string; type: string }

/** An agent definition's own problems (422 and 409 of saving an agent): `{is_valid: false, errors}`. */
export type DefinitionErrors = {
  is_valid: false
  errors: { kind: 'node' | 'edge' | 'workflow'; id: string | null; field: string | null; message: string }[]
}

/** An answer that was not a 2xx: the API's `detail`, as a message and (for a 422) per field. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string | FieldError[] | DefinitionErrors,
  ) {
    super(
      typeof detail === 'string'
        ? detail
        : Array.isArray(detail)
          ? detail.map(describeProblem).join('; ')
          : detail.errors.map((item) => item.message).join('; '),
    )
  }

  /** The 422 problems a form's fields show next to themselves (`showAtField`): its error note leaves them out. */
  readonly #shownAtFields = new Set<FieldError>()

  /** The 422 message for a body field (`loc` ['body', ...path]), if any. */
  fieldMessage(...path: (string | number)[]): string | undefined {
    return readable(this.#fieldProblem(path))
  }

  /** The same, for a field that shows it: the form's error note will not repeat it. */
  showAtField(...path: (string | number)[]): string | undefined {
    const problem = this.#fieldProblem(path)
    if (problem) this.#shownAtFields.add(problem)
    return readable(problem)
  }

  /** The same for a list's own problem (its `loc` ends at `path`, e.g. too many rows): its rows show those inside them. */
  showAtList(...path: (string | number)[]): string | undefined {
    const problem = this.#fieldProblem(path, true)
    if (problem) this.#shownAtFields.add(problem)
    return readable(problem)
  }

  /** What no field shows: the 422 problems left (or a pointer to the fields), else the whole message. */
  get messageBesideFields(): string {
    if (!Array.isArray(this.detail) || this.#shownAtFields.size === 0) return this.message
    const rest = this.detail.filter((item) => !this.#shownAtFields.has(item))
    const shown = this.#shownAtFields.size
    const pointer = `Not saved: ${shown === 1 ? 'a field needs' : `${shown} fields need`} a change (shown next to ${shown === 1 ? 'it' : 'them'}).`
    return rest.length === 0 ? pointer : `${pointer} ${rest.map(describeProblem).join('; ')}`
  }

  #fieldProblem(path: (string | number)[], exact = false): FieldError | undefined {
    if (!Array.isArray(this.detail)) return undefined
    return this.detail.find(
      (item) =>
        item.loc[0] === 'body' &&
        (!exact || item.loc.length === path.length + 1) &&
        path.every((part, index) => item.loc[index + 1] === part),
    )
  }
}

// The API words a rule across fields as Pydantic does ("Value error, …"): a person reads the message alone.
const readable = (item: FieldError | undefined) => item?.msg.replace(/^Value error, /, '')

const describeProblem = (item: FieldError) => `${item.loc.slice(1).join('.')}: ${readable(item)}`

let csrfToken: string | null = null

/** Set on sign-in and on reload (GET /api/v1/auth/session gives it again). */
export const rememberCsrfToken = (token: string | null) => {
  csrfToken = token
}

/** Called when the session has ended (401 on a request): the app shows the sign-in form again. */
let onSignedOut: () => void = () => {}
export const whenSignedOut = (callback: () => void) => {
  onSignedOut = callback
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  }).catch(() => {
    // the browser says only "Failed to fetch"
    throw new Error('The server could not be reached (the network, or the server down). Try again in a moment.')
  })
  const text = await response.text()
  const json = text ? safeJson(text) : null
  if (!response.ok) {
    if (response.status === 401 && !path.startsWith('/api/v1/auth/session')) onSignedOut()
    throw new ApiError(response.status, json?.detail ?? `${response.status} ${response.statusText}`)
  }
  return json as T
}

function safeJson(text: string): any {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** A query string from the defined values. */
export function query(values: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(values))
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value))
  const text = params.toString()
  return text ? `?${text}` : ''
}
