import type { TestApp } from './app'

/** What the usage report should list, computed in plain TypeScript from what a test seeded. */
export type SeededRun = {
  id: number
  organizationId: number
  workflowId: number
  campaignId: number | null
  mode: string
  callType: 'inbound' | 'outbound'
  callerNumber: string | null
  calledNumber: string | null
  disposition: string | null
  /** null: not finished, so never in the report. */
  duration: number | null
  createdAt: string
}

const CHANNELS: Record<string, string> = {
  ari: 'telephony',
  twilio: 'telephony',
  plivo: 'telephony',
  webrtc: 'web',
  smallwebrtc: 'web',
  textchat: 'chat',
}

/** The expected ids, in order, for a filters array and sort, mirroring the spec's table. */
export function expectedIds(
  runs: SeededRun[],
  organizationId: number,
  filters: { attribute: string; type: string; value: any }[],
  options: { sortBy?: 'duration'; order?: 'asc' | 'desc'; from?: string; to?: string } = {},
): number[] {
  const matches = (run: SeededRun) =>
    filters.every(({ attribute, type, value }) => {
      switch (`${attribute}:${type}`) {
        case 'runId:number':
          return run.id === value.value
        case 'workflowId:number':
          return run.workflowId === value.value
        case 'campaignId:number':
          return run.campaignId === value.value
        case 'callerNumber:text':
          return (run.callerNumber ?? '').toLowerCase().includes(value.value.trim().toLowerCase())
        case 'calledNumber:text':
          return (run.calledNumber ?? '').toLowerCase().includes(value.value.trim().toLowerCase())
        case 'dispositionCode:multiSelect':
          return value.codes.length === 0 || value.codes.includes(run.disposition)
        case 'duration:numberRange':
          return (
            (value.min === undefined || run.duration! >= value.min) &&
            (value.max === undefined || run.duration! <= value.max)
          )
        case 'callDirection:radio':
          return !['inbound', 'outbound'].includes(value.status) || run.callType === value.status
        case 'callChannel:radio':
          return !['telephony', 'web', 'chat'].includes(value.status) || CHANNELS[run.mode] === value.status
        default:
          return true
      }
    })
  const direction = options.order === 'asc' ? 1 : -1
  return runs
    .filter((run) => run.organizationId === organizationId && run.duration !== null && matches(run))
    .filter(
      (run) =>
        (options.from === undefined || run.createdAt >= options.from) &&
        (options.to === undefined || run.createdAt <= options.to),
    )
    .sort((a, b) => {
      const primary = options.sortBy === 'duration' ? a.duration! - b.duration! : a.createdAt.localeCompare(b.createdAt)
      return (primary !== 0 ? primary : a.id - b.id) * direction
    })
    .map((run) => run.id)
}

/** Every id the usage endpoint lists for the query, reading all pages of `limit`. */
export async function listedIds(
  t: TestApp,
  query: Record<string, string>,
  key?: string,
  limit = 100,
): Promise<{ ids: number[]; total: number }> {
  const ids: number[] = []
  let total = 0
  for (let page = 1; ; page++) {
    const response = await t.request(
      'GET',
      `/api/v1/organizations/usage/runs?${new URLSearchParams({ ...query, page: String(page), limit: String(limit) })}`,
      { key },
    )
    if (response.status !== 200) throw new Error(`usage: ${response.status} ${response.text}`)
    total = response.body.total_count
    ids.push(...response.body.runs.map((run: { id: number }) => run.id))
    if (page >= response.body.total_pages) return { ids, total }
  }
}
