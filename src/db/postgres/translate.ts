/**
 * SQL written for SQLite (the services' portable SQL and drizzle's sqlite-core output) as PostgreSQL runs it. Only
 * mechanical differences are handled here; SQL that needs a different shape on PostgreSQL is written twice, in its
 * src/db module (usage-report.ts, live-runs.ts, run-number-search.ts, sql-parts.ts).
 *
 * - `?` parameters → `$1`, `$2`, …, and `?NNN` → `$NNN` (a plain `?` after it is the next number, as in SQLite);
 * - `x IN (SELECT value FROM json_each(?))` (one JSON array bound for any number of values) → `x = ANY($n)`, the
 *   parameter then bound as an array;
 * - `LIKE` → `ILIKE`: SQLite's LIKE ignores the case of ASCII letters, and the services rely on it;
 * - `ON CONFLICT ("table"."column")` (drizzle's sqlite-core upserts) → `ON CONFLICT ("column")`;
 * - a unary `+` before a column (SQLite's way to keep an index out of a condition) is dropped;
 * - `ASC` / `DESC` → `ASC NULLS FIRST` / `DESC NULLS LAST`: SQLite sorts NULL below every value, PostgreSQL above.
 */

export type PostgresStatement = {
  text: string
  /** Positions of parameters bound as JSON array text on SQLite, to be bound as arrays. */
  listParameters: number[]
}

const JSON_LIST = /IN\s*\(\s*SELECT\s+value\s+FROM\s+json_each\(\s*\?\s*\)\s*\)/iy
const LIKE = /LIKE\b/iy
const DIRECTION = /(ASC|DESC)\b(?!\s+NULLS)/iy
const WORD = /\w/

/** The length of `pattern` (sticky) matched at `index`, 0 when it does not match there or `index` is inside a word. */
function matchedAt(pattern: RegExp, text: string, index: number): number {
  if (WORD.test(text[index - 1] ?? ' ')) return 0
  pattern.lastIndex = index
  return pattern.exec(text)?.[0].length ?? 0
}

const cache = new Map<string, PostgresStatement>()
const CACHE_LIMIT = 2000

export function toPostgres(sqliteText: string): PostgresStatement {
  let translated = cache.get(sqliteText)
  if (!translated) {
    translated = translate(sqliteText)
    if (cache.size >= CACHE_LIMIT) cache.clear()
    cache.set(sqliteText, translated)
  }
  return translated
}

/** The end of the quoted span that starts at `start` (the index after its closing quote). */
function quotedEnd(text: string, start: number): number {
  const quote = text[start]
  let index = start + 1
  while (index < text.length) {
    if (text[index] === quote) {
      if (text[index + 1] !== quote) return index + 1
      index += 2
    } else index++
  }
  return text.length
}

const CONFLICT_TARGET = /on conflict \(([^)]*)\)/gi
const unqualifiedTargets = (text: string) =>
  text.replace(CONFLICT_TARGET, (_, columns: string) => `on conflict (${columns.replace(/"[^"]*"\./g, '')})`)

function translate(sqliteText: string): PostgresStatement {
  const text = unqualifiedTargets(sqliteText)
  let out = ''
  let parameter = 0
  const listParameters: number[] = []
  let index = 0
  while (index < text.length) {
    const char = text[index]
    if (char === "'" || char === '"') {
      const end = quotedEnd(text, index)
      out += text.slice(index, end)
      index = end
    } else if (char === '-' && text[index + 1] === '-') {
      const end = text.indexOf('\n', index)
      index = end === -1 ? text.length : end
    } else if (char === '?') {
      const digits = /^\d*/.exec(text.slice(index + 1, index + 6))![0]
      parameter = digits === '' ? parameter + 1 : Math.max(parameter, Number(digits))
      out += `$${digits === '' ? parameter : digits}`
      index += 1 + digits.length
    } else if (char === '+' && /[\s(,]/.test(text[index - 1] ?? ' ') && /[A-Za-z_"]/.test(text[index + 1] ?? '')) {
      index++
    } else if ((char === 'I' || char === 'i') && matchedAt(JSON_LIST, text, index) > 0) {
      out += `= ANY($${++parameter})`
      listParameters.push(parameter - 1)
      index += matchedAt(JSON_LIST, text, index)
    } else if ('AaDd'.includes(char) && matchedAt(DIRECTION, text, index) > 0) {
      const length = matchedAt(DIRECTION, text, index)
      const direction = text.slice(index, index + length)
      out += `${direction} ${direction.toUpperCase() === 'ASC' ? 'NULLS FIRST' : 'NULLS LAST'}`
      index += length
    } else if ((char === 'L' || char === 'l') && matchedAt(LIKE, text, index) > 0) {
      out += 'ILIKE'
      index += 4
    } else {
      out += char
      index++
    }
  }
  return { text: out, listParameters }
}
