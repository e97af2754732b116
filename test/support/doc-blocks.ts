/**
 * The fenced blocks of README.md and docs/*.md, read the way test/docs.test.ts runs and checks them.
 *
 * - ```sh / ```bash / ```shell blocks are commands; ```http blocks (`METHOD /path`, headers, a blank line, a body)
 *   are requests. Both run, in order, against the compiled binary.
 * - A ```json block right after one of those (nothing but blank lines between) is its expected output, matched
 *   loosely (see `shapeProblems`); any other ```json block must be valid JSON.
 * - ```ini blocks are configuration (Asterisk's http.conf, ari.conf, a dialplan line): not run, checked against what
 *   Ringbase expects. ```text blocks are listings.
 * - `<!-- docs-test: skip (reason) -->` on the line before a fence (blank lines allowed) skips a command that cannot
 *   run in a test (it installs software, starts a server…). Any other fence is a problem the test reports.
 */

export type DocOutput = { lang: string; text: string; line: number }

export type DocBlock = {
  /** Relative to the repository, e.g. `docs/asterisk.md`. */
  file: string
  /** 1-based line of the opening fence. */
  line: number
  lang: string
  text: string
  skip: string | null
  output: DocOutput | null
}

export const COMMAND_LANGUAGES = new Set(['sh', 'bash', 'shell', 'http'])
const OTHER_LANGUAGES = new Set(['json', 'ini', 'text', 'ts'])

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)\s*$/
const MARKER = /^<!--\s*docs-test:(.*?)-->$/
const SKIP = /^\s*skip\s*\((.*\S.*)\)\s*$/

type Fence = { line: number; lang: string; text: string; closedAt: number; marker: string | null }

/** The fences of `markdown` with their text (the fence's indentation removed) and the marker before each. */
function fencesOf(lines: string[]): { fences: Fence[]; unclosed: number | null } {
  const fences: Fence[] = []
  let index = 0
  while (index < lines.length) {
    const open = FENCE.exec(lines[index])
    if (!open) {
      index++
      continue
    }
    const [, indent, fence] = open
    const body: string[] = []
    let close = index + 1
    while (close < lines.length && !new RegExp(`^\\s*${fence[0]}{${fence.length},}\\s*$`).test(lines[close])) {
      body.push(lines[close].startsWith(indent) ? lines[close].slice(indent.length) : lines[close].trimStart())
      close++
    }
    if (close >= lines.length) return { fences, unclosed: index + 1 }
    let before = index - 1
    while (before >= 0 && lines[before].trim() === '') before--
    const marker = before >= 0 ? (MARKER.exec(lines[before].trim())?.[1] ?? null) : null
    fences.push({ line: index + 1, lang: open[3].toLowerCase(), text: body.join('\n'), closedAt: close + 1, marker })
    index = close + 1
  }
  return { fences, unclosed: null }
}

/** Only blank lines between the end of `previous` and the start of `next`. */
const follows = (lines: string[], previous: Fence, next: Fence) =>
  lines.slice(previous.closedAt, next.line - 1).every((line) => line.trim() === '')

/** The blocks of one file, and what is wrong with its fences (each naming the file and line). */
export function docBlocks(file: string, markdown: string): { blocks: DocBlock[]; problems: string[] } {
  const lines = markdown.split('\n')
  const { fences, unclosed } = fencesOf(lines)
  const problems: string[] = unclosed === null ? [] : [`${file}:${unclosed}: the fence opened here is never closed`]
  const blocks: DocBlock[] = []
  for (const [position, fence] of fences.entries()) {
    const at = `${file}:${fence.line}`
    const previous = fences[position - 1]
    const last = blocks.at(-1)
    if (
      fence.lang === 'json' &&
      previous &&
      last &&
      last.line === previous.line &&
      COMMAND_LANGUAGES.has(previous.lang) &&
      follows(lines, previous, fence)
    ) {
      last.output = { lang: fence.lang, text: fence.text, line: fence.line }
      continue
    }
    let skip: string | null = null
    if (fence.marker !== null) {
      skip = SKIP.exec(fence.marker)?.[1].trim() ?? null
      if (skip === null)
        problems.push(
          `${at}: unknown marker <!-- docs-test:${fence.marker}-->: the only one is <!-- docs-test: skip (reason) -->`,
        )
      else if (!COMMAND_LANGUAGES.has(fence.lang))
        problems.push(`${at}: only commands are skipped, this block is \`\`\`${fence.lang || '(no language)'}`)
    }
    if (!COMMAND_LANGUAGES.has(fence.lang) && !OTHER_LANGUAGES.has(fence.lang)) {
      problems.push(
        `${at}: fence \`\`\`${fence.lang || '(no language)'}: label it sh, bash, shell or http (commands the test runs), json, ini, text or ts (a listing)`,
      )
    }
    if (fence.lang === 'json' && jsonProblem(fence.text))
      problems.push(`${at}: this json block is not JSON: ${jsonProblem(fence.text)}`)
    blocks.push({ file, line: fence.line, lang: fence.lang, text: fence.text, skip, output: null })
  }
  return { blocks, problems }
}

function jsonProblem(text: string): string | null {
  try {
    JSON.parse(text)
    return null
  } catch (error) {
    return (error as Error).message
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Configuration blocks

export type IniSection = { name: string; entries: Record<string, string> }

/** An Asterisk .conf block: the file its first comment names (`; /etc/asterisk/ari.conf`), its sections and entries. */
export function parseIni(text: string): { file: string | null; sections: IniSection[] } {
  const file = /^\s*;\s*(?:\S*\/)?([\w.-]+\.conf)\b/.exec(text)?.[1] ?? null
  const sections: IniSection[] = []
  for (const raw of text.split('\n')) {
    const line = raw.replace(/;.*$/, '').trim()
    const header = /^\[([^\]]+)\]/.exec(line)
    if (header) sections.push({ name: header[1].trim(), entries: {} })
    else if (/^[\w.-]+\s*=[^>]/.test(line) && sections.length > 0) {
      const [key, ...value] = line.split('=')
      sections.at(-1)!.entries[key.trim()] = value.join('=').trim()
    }
  }
  return { file, sections }
}

export type StasisLine = { exten: string; app: string; args: string }

/** The dialplan lines of a block that hand a call to a Stasis app: `exten => 100,1,Stasis(app,${EXTEN})`. */
export function stasisLines(text: string): StasisLine[] {
  return [...text.matchAll(/^\s*exten\s*=>\s*([^,\s]+)\s*,\s*\w+\s*,\s*Stasis\(([^,)]+)(?:,([^)]*))?\)/gm)].map(
    ([, exten, app, args]) => ({ exten, app: app.trim(), args: (args ?? '').trim() }),
  )
}

// ---------------------------------------------------------------------------------------------------------------
// Commands and outputs

/** A ```http block as a curl command line for the same shell session (`$VARS` in the path and headers expand). */
export function httpAsCurl(text: string): string {
  const [head, ...rest] = text.split(/\n\s*\n/)
  const [requestLine, ...headerLines] = head
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
  const [method, target] = requestLine.split(/\s+/)
  const quoted = (value: string) => `"${value.replace(/["\\`]/g, '\\$&')}"`
  const headers = headerLines.map((line) => `-H ${quoted(line)}`)
  if (!headerLines.some((line) => /^x-api-key\s*:/i.test(line))) headers.push('-H "X-API-Key: $KEY"')
  const body = rest.join('\n\n').trim()
  if (body !== '' && !headerLines.some((line) => /^content-type\s*:/i.test(line)))
    headers.push("-H 'Content-Type: application/json'")
  const url = target.startsWith('/') ? `"$RB"${quoted(target)}` : quoted(target)
  const command = `curl -sS -X ${method} ${url} ${headers.join(' ')}`
  return body === '' ? command : `${command} --data-binary @- <<'DOCS_TEST_BODY'\n${body}\nDOCS_TEST_BODY`
}

/** The top-level JSON objects and arrays printed one after another (jq's output, several curl answers). */
export function jsonValues(text: string): unknown[] {
  const values: unknown[] = []
  let depth = 0
  let start = -1
  let inString = false
  for (let index = 0; index < text.length; index++) {
    const char = text[index]
    if (inString) {
      if (char === '\\') index++
      else if (char === '"') inString = false
    } else if (char === '"' && depth > 0) inString = true
    else if (char === '{' || char === '[') {
      if (depth++ === 0) start = index
    } else if ((char === '}' || char === ']') && depth > 0 && --depth === 0) {
      try {
        values.push(JSON.parse(text.slice(start, index + 1)))
      } catch {
        // Not JSON after all (a shell message with brackets): skip it.
      }
    }
  }
  return values
}

const kind = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value)

/**
 * How `actual` differs from a documented output, loosely: every key shown is there with a value of the same kind,
 * recursively (an array's first element against the first shown); booleans and null are equal; numbers and strings
 * (ids, names, times) only of the same kind. Keys the doc leaves out may be there.
 */
export function shapeProblems(expected: unknown, actual: unknown, path = '$'): string[] {
  if (kind(expected) !== kind(actual))
    return [`${path}: the doc shows ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`]
  if (typeof expected === 'boolean' && expected !== actual) return [`${path}: the doc shows ${expected}, got ${actual}`]
  if (Array.isArray(expected)) {
    const list = actual as unknown[]
    if (expected.length === 0) return []
    if (list.length === 0) return [`${path}: the doc shows items, got an empty array`]
    return shapeProblems(expected[0], list[0], `${path}[0]`)
  }
  if (kind(expected) !== 'object') return []
  const object = actual as Record<string, unknown>
  return Object.entries(expected as Record<string, unknown>).flatMap(([key, value]) =>
    Object.hasOwn(object, key) ? shapeProblems(value, object[key], `${path}.${key}`) : [`${path}.${key}: missing`],
  )
}
