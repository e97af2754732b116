import { sqlPart, type SqlPart } from './sql-parts'

/**
 * Substring search on runs' caller and called numbers (the usage filters callerNumber / calledNumber) through the FTS5
 * trigram index `workflow_run_numbers`, kept by triggers on workflow_runs. SQLite only: on PostgreSQL every pattern is matched by scanning (`scanOnly`).
 */

export type NumberPatterns = { callerNumber?: string; calledNumber?: string }

/** Trigrams need three characters; a shorter pattern is matched by scanning with LIKE. */
const TRIGRAM = 3

const phrase = (text: string) => `"${text.replaceAll('"', '""')}"`

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (character) => `\\${character}`)

/**
 * The FROM clause over workflow_runs and the conditions for the patterns. With a pattern of three or more characters
 * the trigram index drives the query (CROSS JOIN keeps it the outer loop), so the cost follows its matches, unless
 * `scanOnly` says the runs are already narrowed to a few (every pattern is then checked with LIKE).
 */
export function runsMatchingNumbers(
  patterns: NumberPatterns,
  { scanOnly = false } = {},
): { from: string; conditions: SqlPart[]; drivenByIndex: boolean } {
  const columns = [
    ['caller_number', patterns.callerNumber],
    ['called_number', patterns.calledNumber],
  ] as const
  const indexed = columns.filter(([, pattern]) => pattern !== undefined && pattern.length >= TRIGRAM && !scanOnly)
  const scanned = columns.filter(([, pattern]) => pattern !== undefined && (pattern.length < TRIGRAM || scanOnly))
  const conditions = scanned.map(([name, pattern]) =>
    sqlPart(`workflow_runs.${name} LIKE ? ESCAPE '\\'`, `%${escapeLike(pattern!)}%`),
  )
  if (indexed.length === 0) return { from: 'workflow_runs', conditions, drivenByIndex: false }
  const match = indexed.map(([name, pattern]) => `${name} : ${phrase(pattern!)}`).join(' AND ')
  return {
    from: 'workflow_run_numbers CROSS JOIN workflow_runs ON workflow_runs.id = workflow_run_numbers.rowid',
    conditions: [sqlPart('workflow_run_numbers MATCH ?', match), ...conditions],
    drivenByIndex: true,
  }
}
