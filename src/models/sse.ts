/**
 * Server-sent events as OpenAI-compatible servers stream them: only `data` fields matter. Lines may end in LF, CRLF
 * or CR, and the network may cut anywhere, a CRLF or a multi-byte character included.
 */
import { ModelServerError } from './types'

/** The longest line a server may send (a whole chunk of a streamed answer is one line; they are a few hundred bytes). */
export const SSE_LINE_MAX_CHARS = 1024 * 1024

/** The value of a `data:` line (one leading space is not part of it), or null for any other line. */
const dataValue = (line: string) => (line.startsWith('data:') ? line.slice(line[5] === ' ' ? 6 : 5) : null)

/**
 * Each piece is scanned once: the start of a line still unfinished is kept as pieces and joined when its end arrives,
 * so a server sending one endless line costs time in proportion to what it sent, and fails past `maxLineChars`.
 */
export async function* readSseData(
  body: AsyncIterable<Uint8Array>,
  options: { what: string; maxLineChars?: number },
): AsyncGenerator<string> {
  const maxLineChars = options.maxLineChars ?? SSE_LINE_MAX_CHARS
  const decoder = new TextDecoder()
  let unfinished: string[] = []
  let unfinishedLength = 0
  /** The last piece ended with a CR: an LF opening the next one belongs to it. */
  let afterCr = false
  let data: string[] = []
  function* lineEnded(line: string): Generator<string> {
    if (line === '') {
      if (data.length > 0) yield data.join('\n')
      data = []
    }
    const value = dataValue(line)
    if (value !== null) data.push(value)
  }
  function* completeEvents(text: string): Generator<string> {
    let lineStart = afterCr && text.startsWith('\n') ? 1 : 0
    if (text !== '') afterCr = false
    for (let index = lineStart; index < text.length; index++) {
      const character = text[index]
      if (character !== '\n' && character !== '\r') continue
      const line =
        unfinishedLength === 0 ? text.slice(lineStart, index) : unfinished.join('') + text.slice(lineStart, index)
      unfinished = []
      unfinishedLength = 0
      if (character === '\r') {
        if (index + 1 === text.length) afterCr = true
        else if (text[index + 1] === '\n') index++
      }
      lineStart = index + 1
      yield* lineEnded(line)
    }
    if (lineStart < text.length) {
      unfinished.push(text.slice(lineStart))
      unfinishedLength += text.length - lineStart
      if (unfinishedLength > maxLineChars) {
        throw new ModelServerError(
          `${options.what} failed: the server sent a line longer than ${maxLineChars} characters`,
        )
      }
    }
  }
  for await (const chunk of body) yield* completeEvents(decoder.decode(chunk, { stream: true }))
  yield* completeEvents(decoder.decode())
  yield* lineEnded(unfinished.join(''))
  if (data.length > 0) yield data.join('\n')
}
