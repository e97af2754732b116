// Run as a child process by test/models/pinned-connections.test.ts with NODE_EXTRA_CA_CERTS naming the fixture's
// certificate (trust can only be given at a process's start). A model server on 127.0.0.1 with a certificate for
// model.example.test; the client reaches it by that name, which the resolver pins to 127.0.0.1. Prints what each
// connection got as one JSON line.
import { join } from 'node:path'
import type { ModelConnection } from '../../src/models/http'
import { createLlmClient } from '../../src/models/llm'
import { openRealtimeSocket } from '../../src/models/realtime-socket'

const NAME = process.argv[2] ?? 'model.example.test'
const fixtures = join(import.meta.dir, '..', 'fixtures', 'tls')
const answer = {
  choices: [{ index: 0, message: { role: 'assistant', content: '{"ok":true}' }, finish_reason: 'stop' }],
}
const server = Bun.serve<string, never>({
  hostname: '127.0.0.1',
  port: 0,
  tls: {
    cert: await Bun.file(join(fixtures, 'model-server.crt')).text(),
    key: await Bun.file(join(fixtures, 'model-server.key')).text(),
  },
  fetch(request, bun) {
    const host = request.headers.get('host') ?? ''
    if (new URL(request.url).pathname.endsWith('/realtime'))
      return bun.upgrade(request, { data: host }) ? undefined : new Response(null, { status: 400 })
    return Response.json({ ...answer, host })
  },
  websocket: {
    open(socket) {
      socket.send(JSON.stringify({ type: 'session.created', host: socket.data }))
    },
    message() {},
  },
})

const connection: ModelConnection = {
  provider: 'openai',
  baseUrl: `https://${NAME}:${server.port}/v1`,
  thisMachine: { resolveHost: async () => ['127.0.0.1'], log: { warn() {} } },
}
const outcome = (work: Promise<string>) => work.catch((error: Error) => `failed: ${error.message}`)
const chat = outcome(
  createLlmClient(connection, { model: 'fake-llm' })
    .completeJson({ messages: [{ role: 'user', content: 'Hello' }], schema: { type: 'object' }, schemaName: 'answer' })
    .then((reply) => reply.text),
)
const socket = outcome(
  new Promise<string>((resolve, reject) => {
    let opened: { close(): void } | null = null
    openRealtimeSocket(connection, { model: 'fake-realtime' }, 5_000, {
      onEvent: (event) => {
        resolve(`${event.type} via ${(event as { host?: string }).host}`)
        opened?.close()
      },
      onFailure: (error) => reject(error),
    }).then((open) => {
      opened = open
    }, reject)
  }),
)
console.log(JSON.stringify({ chat: await chat, socket: await socket, port: server.port }))
server.stop(true)
