/**
 * A TCP proxy to `127.0.0.1:<target port>` that can turn into a black hole: run as a child process
 * (`bun test/support/tcp-proxy.ts <target port>`), so it keeps forwarding while the test's own thread is blocked in a
 * synchronous client. It prints its port, then reads commands on stdin: `blackhole` cuts every forwarded connection and
 * accepts new ones without ever answering (a server that stopped answering, packets dropped); `forward` goes back to
 * forwarding.
 */
import type { Socket } from 'bun'

const targetPort = Number(process.argv[2])
let blackhole = false
const pairs = new Set<{ client: Socket<Peer>; server: Socket<Peer> | null }>()
type Peer = { pair?: { client: Socket<Peer>; server: Socket<Peer> | null }; early: Uint8Array[] }

const listener = Bun.listen<Peer>({
  hostname: '127.0.0.1',
  port: 0,
  socket: {
    open(client) {
      client.data = { early: [] }
      if (blackhole) return
      const pair: { client: Socket<Peer>; server: Socket<Peer> | null } = { client, server: null }
      client.data.pair = pair
      pairs.add(pair)
      void Bun.connect<Peer>({
        hostname: '127.0.0.1',
        port: targetPort,
        socket: {
          open(server) {
            server.data = { pair, early: [] }
            pair.server = server
            for (const chunk of client.data.early) server.write(chunk)
          },
          data: (_server, chunk) => void client.write(chunk),
          close: () => void client.end(),
          error: () => void client.end(),
        },
      })
    },
    data(client, chunk) {
      const server = client.data.pair?.server
      if (server) server.write(chunk)
      else if (client.data.pair) client.data.early.push(new Uint8Array(chunk))
    },
    close(client) {
      const pair = client.data.pair
      if (!pair) return
      pair.server?.end()
      pairs.delete(pair)
    },
  },
})

console.log(listener.port)
for await (const line of console) {
  if (line.trim() === 'blackhole') {
    blackhole = true
    for (const pair of pairs) {
      pair.client.end()
      pair.server?.end()
    }
    pairs.clear()
  } else if (line.trim() === 'forward') blackhole = false
  console.log(`ok ${line.trim()}`)
}
