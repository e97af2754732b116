import { parse } from 'csv-parse'
import type { SqlDatabase } from '../db/open'
import type { GreetingOverride } from '../db/schema/campaigns'
import { transaction } from '../db/transaction'
import { ARI_PROVIDER, validateDestination, type DestinationRules } from '../lib/phone'
import { CONTACT_INSERT_CHUNK_ROWS, contactImportQueries, type NewContactRow } from './queries'
import { nextTurn } from '../lib/next-turn'

/** A CSV that breaks a rule; `message` names the rows and is safe to show (400). */
export class ContactsError extends Error {}

/** A CSV past one of the size limits below; `message` names the limit (422). */
export class ContactsLimitError extends ContactsError {}

/**
 * How big a contacts CSV may be, besides its byte size (--max-upload-bytes): every column becomes a template
 * variable of every contact, so a header of thousands of columns would store thousands of keys per contact.
 */
export const MAX_CSV_COLUMNS = 200
export const MAX_CSV_COLUMN_NAME_LENGTH = 255
export const MAX_CSV_CELL_LENGTH = 8192
/** One record's characters in all, checked by the parser while it reads (so even a row that never ends stays small). */
const MAX_CSV_RECORD_LENGTH = MAX_CSV_COLUMNS * MAX_CSV_CELL_LENGTH

export type ContactRules = {
  /** Provider of the campaign's telephony configuration and what it lets a destination be: which phone numbers are valid. */
  provider: string
  destinations: DestinationRules
  /** Lowercased template variables every selected agent version needs. */
  requiredVariables: readonly string[]
  /** The organization's recording ids: a row's greeting_override_recording_id must be one. */
  recordingIds: ReadonlySet<string>
}

export type IngestTarget = { sqlite: SqlDatabase; campaignId: number; organizationId: number; firstAttemptAt: number }

const PHONE_COLUMN = 'phone_number'
const GREETING_COLUMNS = ['greeting_override_type', 'greeting_override_text', 'greeting_override_recording_id']
const ROWS_NAMED = 5

/** `2, 5, 9, 11, 12 and 3 more` */
export function describeRows(rows: readonly number[], total: number): string {
  const named = rows.slice(0, ROWS_NAMED).join(', ')
  return total > ROWS_NAMED ? `${named} and ${total - ROWS_NAMED} more` : named
}

/** Row numbers of one kind of problem: the first few and how many in all. */
class RowList {
  readonly rows: number[] = []
  total = 0
  add(row: number) {
    if (this.rows.length < ROWS_NAMED) this.rows.push(row)
    this.total++
  }
  toString() {
    return describeRows(this.rows, this.total)
  }
}

const phoneRule = ({ provider, destinations }: ContactRules) =>
  provider !== ARI_PROVIDER
    ? "All phone numbers must include country code (start with '+') in E.164 format."
    : destinations.rawDialStrings
      ? 'Phone numbers must be E.164 numbers, extensions, SIP URIs or dial strings, without spaces, commas or ampersands.'
      : 'Phone numbers must be E.164 numbers or extensions (SIP URIs and raw dial strings need allow_raw_dial_strings on the ARI configuration).'

function greetingOverride(type: string, text: string, recordingId: string): GreetingOverride | null | 'invalid' {
  const kind = type.trim().toLowerCase()
  if (kind === '') return null
  if (kind === 'text') return text.trim() === '' ? null : { type: 'text', text }
  if (kind === 'audio') return recordingId.trim() === '' ? null : { type: 'audio', recording_id: recordingId.trim() }
  return 'invalid'
}

/** Records parsed from at most this many bytes are handled before the event loop gets a turn (a few ms of work). */
const SLICE_BYTES = 32 * 1024
const FIRST_SLICE_BYTES = 1024

/**
 * Feeds a byte stream to csv-parse in small slices and hands back the records of each slice, pausing for other work
 * between slices: csv-parse emits records synchronously while it is written to, so no slice can hold the process long.
 */
async function* csvRecordBatches(source: ReadableStream<Uint8Array>): AsyncGenerator<string[][]> {
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: MAX_CSV_RECORD_LENGTH,
  })
  let records: string[][] = []
  let failure: Error | null = null
  parser.on('data', (record: string[]) => records.push(record))
  parser.on('error', (error: Error) => {
    failure ??= error
  })
  const ended = new Promise<void>((resolve) => parser.on('end', resolve).on('error', () => resolve()))
  const take = () => {
    if ((failure as { code?: string } | null)?.code === 'CSV_MAX_RECORD_SIZE') {
      throw new ContactsLimitError(`A row of the CSV file is longer than ${MAX_CSV_RECORD_LENGTH} characters`)
    }
    if (failure) throw new ContactsError(`The CSV file could not be parsed: ${failure.message}`)
    const batch = records
    records = []
    return batch
  }
  let sliceBytes = FIRST_SLICE_BYTES
  for await (const chunk of source) {
    for (let offset = 0; offset < chunk.byteLength; ) {
      parser.write(chunk.subarray(offset, offset + sliceBytes))
      offset += sliceBytes
      // The first slices run on cold (not yet optimised) code, so they start small.
      sliceBytes = Math.min(sliceBytes * 2, SLICE_BYTES)
      // Parsing a slice and storing its records are two turns of the event loop, each a few milliseconds.
      await nextTurn()
      yield take()
      await nextTurn()
    }
  }
  parser.end()
  await ended
  yield take()
}

/** Which cells of a row become what, decided once from the header. */
type ColumnPlan = {
  phone: number
  /** The context keys, JSON-encoded with their colon, and their cell; greeting override columns are not context. */
  context: [string, number][]
  required: [string, number][]
  greeting: [number, number, number]
}

function planColumns(header: string[], rules: ContactRules): ColumnPlan {
  if (header.length > MAX_CSV_COLUMNS) {
    throw new ContactsLimitError(`The CSV file has ${header.length} columns; at most ${MAX_CSV_COLUMNS} are allowed`)
  }
  const names = header.map((name) => name.trim().toLowerCase())
  const longName = names.findIndex((name) => name.length > MAX_CSV_COLUMN_NAME_LENGTH)
  if (longName >= 0) {
    throw new ContactsLimitError(
      `Column ${longName + 1} of the CSV header is longer than ${MAX_CSV_COLUMN_NAME_LENGTH} characters`,
    )
  }
  const phone = names.indexOf(PHONE_COLUMN)
  if (phone < 0) throw new ContactsError(`Source must contain a '${PHONE_COLUMN}' column`)
  const missing = rules.requiredVariables.filter((name) => !names.includes(name)).sort()
  if (missing.length > 0) {
    throw new ContactsError(
      `Workflow uses template variables that are missing from the source data: ${missing.map((name) => `'${name}'`).join(', ')}. ` +
        'Add the missing columns or remove them from the workflow.',
    )
  }
  // With duplicate header names the last column wins, as it would when building a dictionary row by row.
  const lastIndex = (name: string) => names.lastIndexOf(name)
  const contextNames = [...new Set(names)].filter((name) => !GREETING_COLUMNS.includes(name))
  return {
    phone,
    context: contextNames.map((name) => [`${JSON.stringify(name)}:`, lastIndex(name)]),
    required: rules.requiredVariables.map((name) => [name, lastIndex(name)]),
    greeting: [lastIndex(GREETING_COLUMNS[0]), lastIndex(GREETING_COLUMNS[1]), lastIndex(GREETING_COLUMNS[2])],
  }
}

const cellOf = (record: string[], index: number) => (index >= 0 && index < record.length ? record[index] : '')

/** What an import has seen so far: its place in the file, the contacts written, and the problems found. */
type Ingest = {
  rules: ContactRules
  plan: ColumnPlan | null
  rowNumber: number
  contacts: number
  /** The slice's valid rows, written at the slice's end. */
  pending: NewContactRow[]
  invalidPhones: RowList
  duplicates: RowList
  invalidGreetings: RowList
  unknownRecordings: RowList
  emptyVariables: Map<string, RowList>
}

/** Checks one data row; a valid one joins `pending`. */
function ingestRow(ingest: Ingest, record: string[], columns: ColumnPlan): void {
  const rowNumber = ++ingest.rowNumber
  const longCell = record.findIndex((cell) => cell.length > MAX_CSV_CELL_LENGTH)
  if (longCell >= 0) {
    throw new ContactsLimitError(
      `Row ${rowNumber}, column ${longCell + 1} of the CSV file is longer than ${MAX_CSV_CELL_LENGTH} characters`,
    )
  }
  const phone = cellOf(record, columns.phone).trim()
  if (phone === '') return
  for (const [name, index] of columns.required) {
    if (cellOf(record, index).trim() !== '') continue
    if (!ingest.emptyVariables.has(name)) ingest.emptyVariables.set(name, new RowList())
    ingest.emptyVariables.get(name)!.add(rowNumber)
  }
  const greeting = greetingOverride(
    cellOf(record, columns.greeting[0]),
    cellOf(record, columns.greeting[1]),
    cellOf(record, columns.greeting[2]),
  )
  if (greeting === 'invalid') ingest.invalidGreetings.add(rowNumber)
  else if (greeting?.type === 'audio' && !ingest.rules.recordingIds.has(greeting.recording_id))
    ingest.unknownRecordings.add(rowNumber)
  if (validateDestination(phone, ingest.rules.provider, ingest.rules.destinations) !== null) {
    ingest.invalidPhones.add(rowNumber)
    return
  }
  // Only the cells a contact has: an empty one reads the same as a missing variable.
  let context = '{'
  for (const [key, index] of columns.context) {
    const cell = index === columns.phone ? phone : cellOf(record, index)
    if (cell === '') continue
    if (context.length > 1) context += ','
    context += key + JSON.stringify(cell)
  }
  ingest.pending.push([
    rowNumber,
    phone,
    `${context}}`,
    greeting === null || greeting === 'invalid' ? null : JSON.stringify(greeting),
  ])
}

/**
 * Writes the slice's rows, many per statement. A duplicate phone number is skipped by the unique index; when a
 * statement wrote fewer rows than it carried, the rows whose number is stored under another row are the duplicates.
 */
function writePending(ingest: Ingest, queries: ReturnType<typeof contactImportQueries>): void {
  for (let start = 0; start < ingest.pending.length; start += CONTACT_INSERT_CHUNK_ROWS) {
    const rows = ingest.pending.slice(start, start + CONTACT_INSERT_CHUNK_ROWS)
    const written = queries.insert(rows)
    ingest.contacts += written
    if (written === rows.length) continue
    for (const [number, phone] of rows) if (queries.storedRowNumber(phone) !== number) ingest.duplicates.add(number)
  }
  ingest.pending = []
}

/** The first broken rule of the whole file, as the error to throw, or null. */
function ingestProblem(ingest: Ingest): ContactsError | null {
  if (ingest.plan === null || ingest.rowNumber === 1)
    return new ContactsError('CSV file must have a header row and at least one data row')
  if (ingest.invalidPhones.total > 0)
    return new ContactsError(`Invalid phone numbers in rows: ${ingest.invalidPhones}. ${phoneRule(ingest.rules)}`)
  if (ingest.duplicates.total > 0) {
    return new ContactsError(
      `Duplicate phone numbers found in rows: ${ingest.duplicates}. Phone numbers in a campaign must be unique.`,
    )
  }
  const [emptyName, emptyRows] = [...ingest.emptyVariables.entries()].sort(([a], [b]) => a.localeCompare(b))[0] ?? []
  if (emptyName !== undefined) {
    return new ContactsError(
      `Template variable '${emptyName}' is empty in rows: ${emptyRows}. All template variables used in the workflow must have values in every row.`,
    )
  }
  if (ingest.invalidGreetings.total > 0) {
    return new ContactsError(
      `Invalid greeting_override_type in rows: ${ingest.invalidGreetings}. Use 'text' or 'audio', or leave it empty.`,
    )
  }
  if (ingest.unknownRecordings.total > 0) {
    return new ContactsError(
      `Unknown greeting_override_recording_id in rows: ${ingest.unknownRecordings}. Each must be the recording_id of one of the organization's recordings (GET /api/v1/workflow-recordings/).`,
    )
  }
  if (ingest.contacts === 0) return new ContactsError(`CSV file has no row with a ${PHONE_COLUMN}`)
  return null
}

/**
 * Streams a contacts CSV into `campaign_contacts`, validating every rule on the way, one transaction per slice of
 * input with a pause for other work between slices. Throws ContactsError naming the rows when a rule is broken; the
 * caller then discards the campaign (rows already written belong to it). Returns the number of contacts.
 * Duplicates are found by the (campaign, phone number) unique index, so memory stays flat whatever the file size.
 */
export async function ingestContacts(
  source: ReadableStream<Uint8Array>,
  rules: ContactRules,
  target: IngestTarget,
): Promise<number> {
  const queries = contactImportQueries(target.sqlite, target)
  const ingest: Ingest = {
    rules,
    plan: null,
    rowNumber: 1,
    contacts: 0,
    pending: [],
    invalidPhones: new RowList(),
    duplicates: new RowList(),
    invalidGreetings: new RowList(),
    unknownRecordings: new RowList(),
    emptyVariables: new Map(),
  }
  for await (const records of csvRecordBatches(source)) {
    transaction(target, () => {
      for (const record of records) {
        if (ingest.plan === null) ingest.plan = planColumns(record, rules)
        else ingestRow(ingest, record, ingest.plan)
      }
      writePending(ingest, queries)
    })
  }
  const problem = ingestProblem(ingest)
  if (problem) throw problem
  return ingest.contacts
}
