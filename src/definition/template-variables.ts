import { isPlainObject } from '../lib/values'
import type { AgentDefinition } from './rules'

/**
 * `{{ path }}` placeholders in prompts, greetings and transition speech: `{{ path | default }}` and the older
 * `{{ path | fallback:default }}` give a default, which makes the variable optional.
 */
const PLACEHOLDER = /\{\{\s*([^|\s}]+)(?:\s*\|\s*([^:}]+)(?::([^}]+))?)?\s*\}\}/g

/** Filled in by the platform for every call, never expected from contact data. */
const SYSTEM_VARIABLES = new Set(['campaign_id', 'provider', 'source_uuid'])

const PROMPTED_NODE_TYPES = new Set(['startCall', 'agentNode', 'endCall', 'globalNode'])

type Placeholder = { path: string; fallback: string | undefined }

// Like Python's str.title(): the first letter of each run of letters upper-cased, the rest lower-cased.
const titleCase = (text: string) =>
  text
    .toLowerCase()
    .replace(/(^|[^\p{L}])(\p{L})/gu, (_, before: string, letter: string) => before + letter.toUpperCase())

function toPlaceholder(path: string, filter: string | undefined, argument: string | undefined): Placeholder {
  const name = filter?.trim()
  const value = argument?.trim()
  if (name === undefined) return { path, fallback: undefined }
  if (name === 'fallback') return { path, fallback: value ?? titleCase(path) }
  // Not a filter we know: the whole text after `|` is the default, so `{{ time | 10:30 }}` means "10:30".
  return { path, fallback: value === undefined ? name : `${name}:${value}` }
}

const placeholdersIn = (text: string): Placeholder[] =>
  [...text.matchAll(PLACEHOLDER)].map(([, path, filter, argument]) => toPlaceholder(path, filter, argument))

/** The paths `text`'s placeholders read, in order. */
export const placeholderPaths = (text: string): string[] => placeholdersIn(text).map(({ path }) => path)

/** Where each placeholder of `text` is (the console highlights them), with the path it reads and whether it has a default. */
export const placeholderSpans = (text: string): { start: number; end: number; path: string; optional: boolean }[] =>
  [...text.matchAll(PLACEHOLDER)].map((match) => ({
    start: match.index,
    end: match.index + match[0].length,
    path: match[1],
    optional: toPlaceholder(match[1], match[2], match[3]).fallback !== undefined,
  }))

/** `current_time`, `current_weekday`, and both with `_<IANA zone>` appended; undefined for any other name. */
function clockVariable(name: string): ((now: Date) => string) | undefined {
  const match = /^current_(time|weekday)(?:_(.+))?$/i.exec(name)
  if (!match) return undefined
  const [, kind, zone = 'UTC'] = match
  let format: Intl.DateTimeFormat
  try {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
      weekday: 'long',
    })
  } catch {
    return undefined
  }
  return (now) => {
    const part = Object.fromEntries(format.formatToParts(now).map(({ type, value }) => [type, value]))
    if (kind.toLowerCase() === 'weekday') return part.weekday
    return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute} ${format.resolvedOptions().timeZone}`
  }
}

function templateTexts(definition: AgentDefinition): string[] {
  const texts: unknown[] = []
  for (const node of definition.nodes) {
    if (PROMPTED_NODE_TYPES.has(node.type)) texts.push(node.data.prompt)
    if (node.type === 'startCall') texts.push(node.data.greeting)
  }
  for (const edge of definition.edges) texts.push(edge.data.transition_speech)
  return texts.filter((text): text is string => typeof text === 'string')
}

/** A path the platform fills in itself, or reads from deeper in the context: nested paths, clock and system variables. */
export const isBuiltInVariable = (path: string): boolean =>
  path.includes('.') || SYSTEM_VARIABLES.has(path.toLowerCase()) || clockVariable(path) !== undefined

/** Placeholders whose value must come from the call context. */
function contextPlaceholders(definition: AgentDefinition): Placeholder[] {
  return templateTexts(definition)
    .flatMap(placeholdersIn)
    .filter(({ path }) => !isBuiltInVariable(path))
}

/**
 * Variables a campaign's contact data must supply: sorted, lowercased, unique. Compare them with lowercased CSV headers
 * (lookups in `renderTemplate` ignore case too, so `{{FirstName}}` is filled from a `firstname` column).
 */
export function requiredTemplateVariables(definition: AgentDefinition): string[] {
  const names = contextPlaceholders(definition)
    .filter(({ fallback }) => fallback === undefined)
    .map(({ path }) => path.toLowerCase())
  return [...new Set(names)].sort()
}

/**
 * The agent's `template_context_variables`: every variable it reads from the call context (lowercased, sorted) mapped to
 * the default its placeholder gives, or "" when it has none; i.e. a sample `initial_context` to fill in. The reference
 * stores a free-form object its editor sets; we derive it from the definition so it never disagrees with the prompts.
 */
export function templateContextVariables(definition: AgentDefinition): Record<string, string> {
  const defaults = new Map<string, string>()
  for (const { path, fallback } of contextPlaceholders(definition)) {
    const name = path.toLowerCase()
    // The first placeholder that gives a default decides it.
    if (!defaults.get(name)) defaults.set(name, fallback ?? '')
  }
  return Object.fromEntries([...defaults].sort(([a], [b]) => (a < b ? -1 : 1)))
}

const NOT_FOUND = Symbol('not found')

/** Follows a dotted path through objects and arrays; an exact key wins, otherwise keys match ignoring case. */
function lookUp(context: unknown, path: string): unknown {
  let current = context
  for (const segment of path.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(segment) && Number(segment) < current.length) {
      current = current[Number(segment)]
      continue
    }
    if (!isPlainObject(current)) return NOT_FOUND
    const lowered = segment.toLowerCase()
    const key = Object.hasOwn(current, segment)
      ? segment
      : Object.keys(current).find((candidate) => candidate.toLowerCase() === lowered)
    if (key === undefined) return NOT_FOUND
    current = current[key]
  }
  return current
}

const INITIAL_CONTEXT_PREFIX = 'initial_context.'

/** A placeholder's value: the context's (clock variables included), else its default; undefined when it has neither. */
function placeholderValue(placeholder: Placeholder, context: Record<string, unknown>, now: Date): unknown {
  const { path, fallback } = placeholder
  let value = lookUp(context, path)
  if (value === NOT_FOUND && path.startsWith(INITIAL_CONTEXT_PREFIX))
    value = lookUp(context, path.slice(INITIAL_CONTEXT_PREFIX.length))
  if (value === NOT_FOUND) value = clockVariable(path)?.(now) ?? NOT_FOUND
  if (value === NOT_FOUND || value === null || value === undefined || value === '') return fallback
  return value
}

/**
 * Fills every placeholder of `text` from `context` (a run's initial context). A missing, null or empty value gives the
 * placeholder's default, or "" without one; objects and arrays are written as JSON; clock variables use `now`.
 * `escape` is applied to each filled-in value (e.g. encodeURIComponent for a URL), not to the text around it.
 */
export function renderTemplate(
  text: string,
  context: Record<string, unknown>,
  now: Date = new Date(),
  escape: (value: string) => string = (value) => value,
): string {
  return text.replace(PLACEHOLDER, (_, rawPath: string, filter?: string, argument?: string) => {
    const value = placeholderValue(toPlaceholder(rawPath, filter, argument), context, now) ?? ''
    return escape(typeof value === 'object' ? JSON.stringify(value) : String(value))
  })
}

/**
 * Like renderTemplate, except that a text which is exactly one placeholder gives the value itself, its JSON type kept
 * (a number stays a number, a list a list); undefined when that value is missing and there is no default.
 */
export function templateValue(text: string, context: Record<string, unknown>, now: Date = new Date()): unknown {
  const single = [...text.trim().matchAll(PLACEHOLDER)]
  if (single.length === 1 && single[0][0] === text.trim()) {
    const [, path, filter, argument] = single[0]
    return placeholderValue(toPlaceholder(path, filter, argument), context, now)
  }
  return renderTemplate(text, context, now)
}
