import { connect } from 'node:net'

export type RawResponse = { status: number; headers: Record<string, string>; body: string }

/**
 * Writes `head` (and `body`, if any) as-is to a TCP connection and resolves with the first response once it is complete
 * (by its Content-Length), without sending anything more: what a server answers before reading a body, or with a Host
 * header no client library would send.
 */
export function rawHttp(baseUrl: string, head: string, body?: string): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0)
    const socket = connect(Number(port), hostname, () => socket.write(body === undefined ? head : head + body))
    const finish = (response: RawResponse) => {
      socket.destroy()
      resolve(response)
    }
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      const headEnd = received.indexOf('\r\n\r\n')
      if (headEnd < 0) return
      const [statusLine, ...headerLines] = received.subarray(0, headEnd).toString('latin1').split('\r\n')
      const headers = Object.fromEntries(
        headerLines.map((line) => {
          const colon = line.indexOf(':')
          return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]
        }),
      )
      const bodyBytes = received.subarray(headEnd + 4)
      if (bodyBytes.byteLength < Number(headers['content-length'] ?? 0)) return
      finish({ status: Number(statusLine.split(' ')[1]), headers, body: bodyBytes.toString('utf8') })
    })
    socket.on('error', reject)
    socket.on('close', () =>
      reject(new Error(`connection closed before a whole response: ${received.toString('latin1')}`)),
    )
  })
}
