/**
 * Server-sent events as OpenAI-compatible servers stream them: only `data` fields matter. Lines may end in LF, CRLF
 * or CR, and the network may cut anywhere, a CRLF or a multi-byte character included.
 */
/** The value of a `data:` line (one leading space is not part of it), or null for any other line. */
const dataValue = (line: string) => (line.startsWith('data:') ? line.slice(line[5] === ' ' ? 6 : 5) : null)

export async function* readSseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder()
  let pending = ''
  let data: string[] = []
  function* completeEvents(text: string, final: boolean): Generator<string> {
    pending += text
    let lineStart = 0
    for (let index = 0; index < pending.length; index++) {
      const character = pending[index]
      if (character !== '\n' && character !== '\r') continue
      // A CR at the very end may be the first half of a CRLF still on its way.
      if (character === '\r' && index + 1 === pending.length && !final) break
      const line = pending.slice(lineStart, index)
      if (character === '\r' && pending[index + 1] === '\n') index++
      lineStart = index + 1
      if (line === '') {
        if (data.length > 0) yield data.join('\n')
        data = []
      }
      const value = dataValue(line)
      if (value !== null) data.push(value)
    }
    pending = pending.slice(lineStart)
    if (final) {
      const value = dataValue(pending)
      if (value !== null) data.push(value)
      if (data.length > 0) yield data.join('\n')
    }
  }
  for await (const chunk of body) yield* completeEvents(decoder.decode(chunk, { stream: true }), false)
  yield* completeEvents(decoder.decode(), true)
}
