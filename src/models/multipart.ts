/**
 * A multipart/form-data body (an STT upload), built in one buffer. The same body through FormData and a Blob costs Bun
 * about 0.3–0.6 ms of the event loop per upload, this about 0.1 ms: when 100 callers stop speaking at the same instant,
 * their 100 uploads start in one go.
 */
export type MultipartPart =
  | { name: string; value: string }
  /** A file's bytes, one piece or several laid end to end (a header and the samples, without joining them first). */
  | { name: string; filename: string; contentType: string; bytes: Uint8Array | Uint8Array[] }

export class MultipartBody {
  constructor(
    readonly contentType: string,
    readonly bytes: Uint8Array,
  ) {}
}

const encoder = new TextEncoder()

/** A header parameter's value, quoted: no line breaks, quotes escaped (RFC 7578 §4.2). */
const quoted = (text: string) => `"${text.replace(/[\r\n]/g, ' ').replace(/"/g, '%22')}"`

export function multipartBody(parts: MultipartPart[]): MultipartBody {
  const boundary = `ringbase-${crypto.randomUUID()}`
  const pieces: Uint8Array[] = []
  for (const part of parts) {
    const file = 'bytes' in part
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(part.name)}` +
      (file ? `; filename=${quoted(part.filename)}\r\nContent-Type: ${part.contentType}` : '') +
      '\r\n\r\n'
    pieces.push(encoder.encode(head))
    if (!file) pieces.push(encoder.encode(part.value))
    else if (Array.isArray(part.bytes)) pieces.push(...part.bytes)
    else pieces.push(part.bytes)
    pieces.push(encoder.encode('\r\n'))
  }
  pieces.push(encoder.encode(`--${boundary}--\r\n`))
  const bytes = new Uint8Array(pieces.reduce((sum, piece) => sum + piece.length, 0))
  let at = 0
  for (const piece of pieces) {
    bytes.set(piece, at)
    at += piece.length
  }
  return new MultipartBody(`multipart/form-data; boundary=${boundary}`, bytes)
}
