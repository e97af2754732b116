/**
 * Server-sent events as OpenAI-compatible servers stream them: only `data` fields matter. Lines may end in LF, CRLF
 * or CR, and the network may cut anywhere, a CRLF or a multi-byte character included.
 */
import { ModelServerError } from './types'

/** The longest line a server may send (a whole chunk of a streamed answer is one line; they are a few hundred bytes). */
export const SSE_LINE_MAX_CHARS = 1024 * 1024

/**
 * The `data` of the events each piece of `body` completes, together: a server's events often arrive several to a
 * network read (eight on average, and up to thirty, when 100 answers stream at once), and what a consumer does once
 * per batch rather than per event (a hop through each async layer above) is what that instant costs.
 *
 * Each piece is scanned once, by native searches for the line ends (not character by character, and with no generator
 * per line: 100 answers streaming at once are thousands of events a second): the start of a line still unfinished is
 * kept as pieces and joined when its end arrives, so a server sending one endless line costs time in proportion to
 * what it sent, and fails past `maxLineChars`.
 */
export async function* readSseData(
  body: AsyncIterable<Uint8Array>,
  options: { what: string; maxLineChars?: number },
): AsyncGenerator<string[]> {
  const decoder = new TextDecoder()
  const parser = sseParser(options.what, options.maxLineChars ?? SSE_LINE_MAX_CHARS)
  for await (const chunk of body) {
    const events = parser.push(decoder.decode(chunk, { stream: true }))
    if (events.length > 0) yield events
  }
  const last = parser.end(decoder.decode())
  if (last.length > 0) yield last
}

const LF = 10
const CR = 13
const SPACE = 32

function sseParser(what: string, maxLineChars: number) {
  let unfinished: string[] = []
  let unfinishedLength = 0
  /** The last piece ended with a CR: an LF opening the next one belongs to it. */
  let afterCr = false
  let data: string[] = []

  /** A whole line: a blank one ends the event (its data lines joined); only `data:` lines count. */
  function lineEnded(line: string, events: string[]): void {
    if (line === '') {
      if (data.length > 0) events.push(data.join('\n'))
      data = []
    } else if (line.startsWith('data:')) data.push(line.slice(line.charCodeAt(5) === SPACE ? 6 : 5))
  }

  /** The events `text` completes. */
  function push(text: string): string[] {
    const events: string[] = []
    let lineStart = afterCr && text.charCodeAt(0) === LF ? 1 : 0
    if (text !== '') afterCr = false
    // the next LF and CR at or after lineStart, each searched again only once passed (-1: none left in `text`)
    let lf = text.indexOf('\n', lineStart)
    let cr = text.indexOf('\r', lineStart)
    while (lf !== -1 || cr !== -1) {
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr)
      const line =
        unfinishedLength === 0 ? text.slice(lineStart, end) : unfinished.join('') + text.slice(lineStart, end)
      unfinished = []
      unfinishedLength = 0
      lineStart = end + 1
      if (text.charCodeAt(end) === CR) {
        if (lineStart === text.length) afterCr = true
        else if (text.charCodeAt(lineStart) === LF) lineStart++
      }
      if (lf !== -1 && lf < lineStart) lf = text.indexOf('\n', lineStart)
      if (cr !== -1 && cr < lineStart) cr = text.indexOf('\r', lineStart)
      lineEnded(line, events)
    }
    if (lineStart < text.length) {
      unfinished.push(text.slice(lineStart))
      unfinishedLength += text.length - lineStart
      if (unfinishedLength > maxLineChars)
        throw new ModelServerError(`${what} failed: the server sent a line longer than ${maxLineChars} characters`)
    }
    return events
  }

  /** The stream ended: the events of its last piece, of a last line without its end, and a last event without its blank line. */
  function end(text: string): string[] {
    const events = push(text)
    lineEnded(unfinished.join(''), events)
    if (data.length > 0) events.push(data.join('\n'))
    return events
  }

  return { push, end }
}
