/**
 * Reading the body of an answer from a server we called (a model server, a carrier, Asterisk, a tool, a webhook
 * receiver) without trusting its size: pieces are counted as they arrive and the body is cancelled past the cap, so
 * memory stays bounded whatever the server sends or declares.
 */

/**
 * At most `maxBytes` of `body`; `truncated` when there was more (the rest is cancelled, never read). A null body is
 * empty.
 */
export async function readCappedBytes(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  if (!body) return { bytes: new Uint8Array(0), truncated: false }
  const reader = body.getReader()
  const pieces: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return { bytes: Buffer.concat(pieces, size), truncated: false }
      if (size + value.byteLength > maxBytes) {
        pieces.push(value.subarray(0, maxBytes - size))
        await reader.cancel().catch(() => undefined)
        return { bytes: Buffer.concat(pieces, maxBytes), truncated: true }
      }
      pieces.push(value)
      size += value.byteLength
    }
  } finally {
    reader.releaseLock()
  }
}

/** `readCappedBytes` as UTF-8 text (a character cut by the cap becomes U+FFFD). */
export async function readCappedText(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<{ text: string; truncated: boolean }> {
  const { bytes, truncated } = await readCappedBytes(body, maxBytes)
  return { text: new TextDecoder().decode(bytes), truncated }
}

/**
 * `body` passed on as it comes, for a reader that consumes a stream itself (a client library, an event stream): past
 * `maxBytes` it errors with `tooLarge()` and the source is cancelled.
 */
export function cappedStream(
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
  tooLarge: () => Error,
): ReadableStream<Uint8Array> {
  let size = 0
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(piece, controller) {
        size += piece.byteLength
        if (size > maxBytes) controller.error(tooLarge())
        else controller.enqueue(piece)
      },
    }),
  )
}
