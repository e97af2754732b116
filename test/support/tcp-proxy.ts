/**
 * A TCP proxy to `127.0.0.1:<target port>` that can turn into a black hole: run as a child process
 * (`bun test/support/tcp-proxy.ts <target port>`), so it keeps forwarding while the test's own thread is blocked in a
 * synchronous client. It prints its port, then reads commands on stdin: `blackhole` cuts every forwarded connection and
 * accepts new ones without ever answering (a server that stopped answering, packets dropped); `silence` does the same
 * but keeps the forwarded connections open, dropping what either side sends (a network cut: no error, no answer);
 * `refuse` cuts every forwarded connection and closes new ones at once (a server restarting: the client fails at once,
 * and may retry); `forward` goes back to forwarding (new connections).
 */
import type { Socket } from 'bun'

type Peer = { pair?: { client: Socket<Peer>; server: Socket<Peer> | null }; early: Uint8Array[] }

/** The proxy as a child process; `command` sends one of its commands and waits for its acknowledgement. */
export async function startTcpProxy(targetPort: string | number) {
  const proxy = Bun.spawn([process.execPath, import.meta.path, String(targetPort)], { stdin: 'pipe', stdout: 'pipe' })
  const lines = (async function* () {
    let buffered = ''
    for await (const chunk of proxy.stdout) {
      buffered += new TextDecoder().decode(chunk)
      for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
        yield buffered.slice(0, end)
        buffered = buffered.slice(end + 1)
      }
    }
  })()
  const port = Number((await lines.next()).value)
  return {
    port,
    async command(line: 'blackhole' | 'silence' | 'refuse' | 'forward') {
      proxy.stdin.write(`${line}\n`)
      proxy.stdin.flush()
      const acknowledged = (await lines.next()).value
      if (acknowledged !== `ok ${line}`) throw new Error(`the proxy answered ${acknowledged} to ${line}`)
    },
    stop: () => proxy.kill(),
  }
}

async function runProxy(targetPort: number): Promise<void> {
  let blackhole = false
  let silent = false
  let refusing = false
  const pairs = new Set<{ client: Socket<Peer>; server: Socket<Peer> | null }>()

  const listener = Bun.listen<Peer>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        client.data = { early: [] }
        if (refusing) {
          client.end()
          return
        }
        if (blackhole || silent) return
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
            data: (_server, chunk) => void (silent || client.write(chunk)),
            close: () => void client.end(),
            error: () => void client.end(),
          },
        })
      },
      data(client, chunk) {
        if (silent) return
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

  const cutForwarded = () => {
    for (const pair of pairs) {
      pair.client.end()
      pair.server?.end()
    }
    pairs.clear()
  }

  console.log(listener.port)
  for await (const line of console) {
    if (line.trim() === 'blackhole') {
      blackhole = true
      cutForwarded()
    } else if (line.trim() === 'refuse') {
      refusing = true
      cutForwarded()
    } else if (line.trim() === 'silence') silent = true
    else if (line.trim() === 'forward') {
      if (silent) for (const pair of pairs) pair.client.end()
      blackhole = false
      silent = false
      refusing = false
    }
    console.log(`ok ${line.trim()}`)
  }
}

if (import.meta.main) await runProxy(Number(process.argv[2]))
