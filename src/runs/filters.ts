import type { CallType } from '../db/schema'
import { parseIsoDateTime } from '../lib/iso-datetime'

/**
 * The `filters` query parameter of run lists: a JSON array of `{attribute, type, value}`. Each attribute has one type;
 * an item of another type, or with a value of the wrong shape, is ignored, as are unknown attributes (the endpoint decides
 * whether those are an error). Items are ANDed; when an attribute repeats, its last item counts.
 */

export type Channel = 'telephony' | 'web' | 'chat'

/** What runs must match. Bounds are inclusive; date bounds are ISO strings comparable with created_at. */
export type RunCriteria = {
  runId?: number
  agentId?: number
  campaignId?: number
  callerNumber?: string
  calledNumber?: string
  dispositions?: string[]
  minDuration?: number
  maxDuration?: number
  callType?: CallType
  channel?: Channel
  createdFrom?: string
  createdTo?: string
  completed?: boolean
  minTokens?: number
  maxTokens?: number
}

export type FilterItem = { attribute: string; type: unknown; value: Record<string, unknown> }

/** The filter items of the parameter, or null when it is not a JSON array. Items that are not objects are dropped. */
export function parseFilterItems(raw: string | undefined): FilterItem[] | null {
  if (raw === undefined || raw.trim() === '') return []
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    return null
  }
  if (!Array.isArray(parsed)) return null
  return parsed
    .filter(
      (item): item is Record<string, unknown> =>
        typeof item === 'object' && item !== null && typeof item.attribute === 'string',
    )
    .map((item) => ({
      attribute: item.attribute as string,
      type: item.type,
      value: typeof item.value === 'object' && item.value !== null ? (item.value as Record<string, unknown>) : {},
    }))
}

const finite = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined

const wholeNumber = (value: unknown): number | undefined => {
  const number = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : finite(value)
  return number !== undefined && Number.isSafeInteger(number) ? number : undefined
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined

const isoBound = (value: unknown, endOfDay: boolean): string | undefined => {
  if (typeof value !== 'string') return undefined
  const parsed = parseIsoDateTime(value)
  if (!parsed.ok) return undefined
  return new Date(parsed.dateOnly && endOfDay ? parsed.ms + DAY_MS - 1 : parsed.ms).toISOString()
}

export const DAY_MS = 24 * 60 * 60 * 1000

type FilterSpec = { type: string; apply: (value: Record<string, unknown>) => RunCriteria }

const oneOf = <T extends string>(allowed: readonly T[], value: unknown): T | undefined =>
  allowed.includes(value as T) ? (value as T) : undefined

/** Every attribute either list understands. */
export const RUN_FILTERS: Record<string, FilterSpec> = {
  runId: { type: 'number', apply: (value) => ({ runId: wholeNumber(value.value) }) },
  workflowId: { type: 'number', apply: (value) => ({ agentId: wholeNumber(value.value) }) },
  campaignId: { type: 'number', apply: (value) => ({ campaignId: wholeNumber(value.value) }) },
  callerNumber: { type: 'text', apply: (value) => ({ callerNumber: text(value.value) }) },
  calledNumber: { type: 'text', apply: (value) => ({ calledNumber: text(value.value) }) },
  dispositionCode: {
    type: 'multiSelect',
    apply: (value) => {
      const codes = Array.isArray(value.codes)
        ? value.codes.filter((code): code is string => typeof code === 'string')
        : []
      return { dispositions: codes.length > 0 ? codes : undefined }
    },
  },
  duration: {
    type: 'numberRange',
    apply: (value) => ({ minDuration: finite(value.min), maxDuration: finite(value.max) }),
  },
  callDirection: { type: 'radio', apply: (value) => ({ callType: oneOf(['inbound', 'outbound'], value.status) }) },
  callChannel: { type: 'radio', apply: (value) => ({ channel: oneOf(['telephony', 'web', 'chat'], value.status) }) },
  dateRange: {
    type: 'dateRange',
    apply: (value) => ({ createdFrom: isoBound(value.from, false), createdTo: isoBound(value.to, true) }),
  },
  status: {
    type: 'radio',
    apply: (value) => {
      const status = oneOf(['completed', 'in_progress'], value.status)
      return { completed: status === undefined ? undefined : status === 'completed' }
    },
  },
  tokenUsage: {
    type: 'numberRange',
    apply: (value) => ({ minTokens: finite(value.min), maxTokens: finite(value.max) }),
  },
}

/** Combines the items of the allowed attributes; the others are returned in `unknown`. */
export function criteriaFrom(
  items: FilterItem[],
  allowed: readonly string[],
): { criteria: RunCriteria; unknown: string[] } {
  const criteria: RunCriteria = {}
  const unknown: string[] = []
  for (const item of items) {
    const spec = allowed.includes(item.attribute) ? RUN_FILTERS[item.attribute] : undefined
    if (!spec) unknown.push(item.attribute)
    else if (item.type === spec.type) Object.assign(criteria, spec.apply(item.value))
  }
  return { criteria, unknown }
}
