import type { Subprocess } from 'bun'
import { join } from 'node:path'
import { waitFor } from './wait'

/**
 * MCP servers for tests, on 127.0.0.1: the protocol's own reference server (`@modelcontextprotocol/server-everything`,
 * Streamable HTTP, run as a child process), and a small hostile one whose behaviour each URL path chooses.
 */

const EVERYTHING = join(import.meta.dir, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js')

export type EverythingServer = { url: string; stop(): void }

function freePort(): number {
  const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const { port } = probe
  void probe.stop(true)
  return port!
}

/**
 * server-everything over HTTP (`index.js streamableHttp` or `index.js sse`, port from PORT); its endpoint is `/mcp`,
 * or `/sse` for the older HTTP+SSE transport.
 */
export async function startEverythingServer(
  transport: 'streamableHttp' | 'sse' = 'streamableHttp',
): Promise<EverythingServer> {
  const port = freePort()
  const child: Subprocess = Bun.spawn([process.execPath, EVERYTHING, transport], {
    env: { ...process.env, PORT: String(port) },
    stdout: 'ignore',
    stderr: 'ignore',
  })
  await waitFor(
    'server-everything to listen',
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/`)).status > 0
      } catch {
        return false
      }
    },
    20_000,
  )
  return { url: `http://127.0.0.1:${port}/${transport === 'sse' ? 'sse' : 'mcp'}`, stop: () => child.kill() }
}

export type HostileMcpServer = {
  /** An endpoint whose `tools/list` and `tools/call` behave as `mode` says. */
  url(mode: HostileMode): string
  /** The Authorization header of every request, in order. */
  authorizations: (string | null)[]
  /** How many `tools/call` requests came. */
  calls(): number
  stop(): void
}

export type HostileMode =
  | 'well-behaved'
  | 'silent'
  | 'huge'
  | 'invalid-json'
  | 'many-tools'
  | 'giant-schema'
  | 'silent-call'
  | 'huge-call'
  | 'error-call'

const HUGE = 'x'.repeat(3 * 1024 * 1024)

type RpcRequest = { id?: number | string; method: string; params?: Record<string, unknown> }

const SUM_TOOL = {
  name: 'add',
  description: 'Adds two numbers',
  inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
}

function listing(mode: HostileMode): unknown {
  if (mode === 'many-tools')
    return {
      tools: Array.from({ length: 10_000 }, (_, index) => ({ name: `t${index}`, inputSchema: { type: 'object' } })),
    }
  if (mode === 'giant-schema') {
    const properties = Object.fromEntries(
      Array.from({ length: 2000 }, (_, index) => [
        `field_${index}`,
        { type: 'string', description: 'a field of a very large schema' },
      ]),
    )
    return { tools: [SUM_TOOL, { name: 'giant', description: 'Too big', inputSchema: { type: 'object', properties } }] }
  }
  return { tools: [SUM_TOOL] }
}

function callResult(mode: HostileMode, params: Record<string, unknown> | undefined): unknown {
  if (mode === 'huge-call') return { content: [{ type: 'text', text: HUGE }] }
  if (mode === 'error-call') return { content: [{ type: 'text', text: 'the ledger is closed' }], isError: true }
  const args = (params?.arguments ?? {}) as { a: number; b: number }
  return {
    content: [
      { type: 'text', text: `${args.a + args.b}` },
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
    ],
  }
}

export function startHostileMcpServer(): HostileMcpServer {
  const authorizations: (string | null)[] = []
  let calls = 0
  const never = new Promise<Response>(() => undefined)
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      authorizations.push(request.headers.get('authorization'))
      if (request.method !== 'POST') return new Response(null, { status: 405 })
      const mode = new URL(request.url).pathname.slice(1) as HostileMode
      const rpc = (await request.json()) as RpcRequest
      if (rpc.id === undefined) return new Response(null, { status: 202 })
      const answer = (result: unknown) => Response.json({ jsonrpc: '2.0', id: rpc.id, result })
      switch (rpc.method) {
        case 'initialize':
          return answer({
            protocolVersion: rpc.params?.protocolVersion,
            capabilities: { tools: {} },
            serverInfo: { name: 'hostile', version: '1.0.0' },
          })
        case 'tools/list':
          if (mode === 'silent') return never
          if (mode === 'huge') return answer({ tools: [{ ...SUM_TOOL, description: HUGE }] })
          if (mode === 'invalid-json')
            return new Response('{"jsonrpc":"2.0","id":', { headers: { 'content-type': 'application/json' } })
          return answer(listing(mode))
        case 'tools/call':
          calls++
          if (mode === 'silent-call') return never
          return answer(callResult(mode, rpc.params))
        default:
          return Response.json({ jsonrpc: '2.0', id: rpc.id, error: { code: -32601, message: 'Method not found' } })
      }
    },
  })
  return {
    url: (mode) => `http://127.0.0.1:${server.port}/${mode}`,
    authorizations,
    calls: () => calls,
    stop: () => void server.stop(true),
  }
}
