/** Pieces a flood is sent in. */
const FLOOD_PIECE_BYTES = 16 * 1024

/**
 * A hostile body: `prefix`, then `bytes` of filler ('a', no line end) in 16 KiB pieces made only as the reader pulls them
 * (never held whole); `sent` is told the size of each piece handed over, so a test can see how much was read.
 */
export function floodBody(
  bytes: number,
  options: { prefix?: string | Uint8Array; sent?: (bytes: number) => void } = {},
): ReadableStream<Uint8Array> {
  const filler = new Uint8Array(FLOOD_PIECE_BYTES).fill(0x61)
  let left = bytes
  let prefix: Uint8Array | null =
    typeof options.prefix === 'string' ? new TextEncoder().encode(options.prefix) : (options.prefix ?? null)
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const piece = prefix ?? (left > 0 ? filler.subarray(0, Math.min(left, FLOOD_PIECE_BYTES)) : null)
        if (!piece) return controller.close()
        if (!prefix) left -= piece.byteLength
        prefix = null
        options.sent?.(piece.byteLength)
        controller.enqueue(piece)
      },
    },
    { highWaterMark: 0 },
  )
}
