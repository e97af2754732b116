import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { ApplianceAddress } from '../../src/egress/network-policy'
import type { ModelConnection } from '../../src/models/http'
import { createLlmClient } from '../../src/models/llm'
import { openRealtimeSocket } from '../../src/models/realtime-socket'
import { say, startFakeModels, type FakeModels } from '../support/fake-models'
import { startFakeRealtime, type FakeRealtime } from '../support/fake-realtime'

/**
 * Connections to model servers are pinned as outbound requests are (egress/outbound.ts): the host name is resolved once
 * through the app's resolver, refused when it reaches this Ringbase server, and the request or socket goes to the
 * address checked, with the name as its Host. The fake servers on 127.0.0.1 stand for the model server, and for "this
 * server" when the appliance's address is set to their port. The name exists in no DNS (.invalid): only a connection
 * to the pinned address can succeed.
 */

let realtime: FakeRealtime
let models: FakeModels
let port: number
beforeAll(() => {
  realtime = startFakeRealtime()
  models = startFakeModels()
  port = Number(new URL(realtime.baseUrl).port)
})
afterAll(() => {
  realtime.stop()
  models.stop()
})

const NAME = 'realtime.models.invalid'
const handlers = { onEvent() {}, onFailure() {} }
const ELSEWHERE: ApplianceAddress = { listenHost: '127.0.0.1', listenPort: 1, publicUrl: 'https://ringbase.example' }

function connectionTo(addresses: string[], appliance: ApplianceAddress = ELSEWHERE, serverPort = port) {
  const asked: string[] = []
  const connection: ModelConnection = {
    provider: 'openai',
    baseUrl: `http://${NAME}:${serverPort}/v1`,
    thisMachine: {
      resolveHost: async (name) => {
        asked.push(name)
        return addresses
      },
      log: { warn() {} },
      appliance,
    },
  }
  return { connection, asked }
}

describe('model sockets are pinned to the address the resolver gave', () => {
  test('a name resolved to an allowed address: the socket connects to that address, with the name as its Host', async () => {
    const { connection, asked } = connectionTo(['127.0.0.1'])
    const socket = await openRealtimeSocket(connection, { intent: 'transcription' }, 5_000, handlers)
    expect(socket.open).toBe(true)
    socket.close()
    expect(asked).toEqual([NAME])
    expect(realtime.connections.at(-1)).toEqual({
      path: '/v1/realtime?intent=transcription',
      host: `${NAME}:${port}`,
      authorization: null,
    })
  })

  test('an address that refuses the connection passes to the next one the name resolved to', async () => {
    // Nothing listens on 127.0.0.2 (the fake is bound to 127.0.0.1 only).
    const { connection } = connectionTo(['127.0.0.2', '127.0.0.1'])
    const socket = await openRealtimeSocket(connection, { intent: 'transcription' }, 5_000, handlers)
    expect(socket.open).toBe(true)
    socket.close()
    expect(realtime.connections.at(-1)).toMatchObject({ host: `${NAME}:${port}` })
  })

  test('a name that resolves to this Ringbase server is refused: nothing connects', async () => {
    const before = realtime.connections.length
    const { connection } = connectionTo(['10.9.8.7', '127.0.0.1'], {
      listenHost: '0.0.0.0',
      listenPort: port,
      publicUrl: 'https://ringbase.example',
    })
    const opening = openRealtimeSocket(connection, { model: 'm' }, 5_000, handlers)
    await expect(opening).rejects.toMatchObject({
      kind: 'refused',
      message: expect.stringContaining('this Ringbase server itself'),
    })
    expect(realtime.connections).toHaveLength(before)
  })

  test('a name that resolves to nothing cannot be reached: nothing connects', async () => {
    const before = realtime.connections.length
    const { connection } = connectionTo([])
    await expect(openRealtimeSocket(connection, { model: 'm' }, 5_000, handlers)).rejects.toMatchObject({
      kind: 'unreachable',
    })
    expect(realtime.connections).toHaveLength(before)
  })
})

describe('HTTP requests to model servers are pinned the same way', () => {
  const modelsPort = () => Number(new URL(models.baseUrl).port)
  const chat = (connection: ModelConnection) =>
    createLlmClient(connection, { model: 'fake-llm' }).completeJson({
      messages: [{ role: 'user', content: 'Hello' }],
      schema: { type: 'object' },
      schemaName: 'answer',
    })

  test('a name resolved to an allowed address: the request goes to that address, with the name as its Host', async () => {
    models.chat.queue(say('{"ok":true}'))
    const { connection, asked } = connectionTo(['127.0.0.2', '127.0.0.1'], ELSEWHERE, modelsPort())
    expect((await chat(connection)).text).toBe('{"ok":true}')
    expect(asked).toEqual([NAME])
    expect(models.requestsTo('/chat/completions').at(-1)!.headers.get('host')).toBe(`${NAME}:${modelsPort()}`)
  })

  test('a failed lookup is not kept: the next attempt asks the resolver again and gets through', async () => {
    models.chat.queue(say('{"ok":true}'))
    const answers = [Promise.reject(new Error('SERVFAIL')), Promise.resolve(['127.0.0.1'])]
    const asked: string[] = []
    const connection: ModelConnection = {
      ...connectionTo([], ELSEWHERE, modelsPort()).connection,
      thisMachine: {
        resolveHost: (name) => {
          asked.push(name)
          return answers.shift()!
        },
        log: { warn() {} },
        appliance: ELSEWHERE,
      },
    }
    // The client retries an unreachable server once: the retry asks the resolver again instead of a kept failure.
    expect((await chat(connection)).text).toBe('{"ok":true}')
    expect(asked).toEqual([NAME, NAME])
  })

  test('a name that resolves to this Ringbase server is refused: nothing is sent', async () => {
    const before = models.requestsTo('/chat/completions').length
    const { connection } = connectionTo(
      ['127.0.0.1'],
      { listenHost: '127.0.0.1', listenPort: modelsPort(), publicUrl: 'https://ringbase.example' },
      modelsPort(),
    )
    // The server is on this machine: its failure reads the same whatever the reason (the log tells it).
    await expect(chat(connection)).rejects.toMatchObject({ kind: 'refused', reasonHidden: true })
    expect(models.requestsTo('/chat/completions')).toHaveLength(before)
  })
})

describe('a pinned connection over TLS checks the certificate against the name, not the address', () => {
  const fixtures = join(import.meta.dir, '..', 'fixtures', 'tls')
  const connectAs = async (name: string) => {
    const child = Bun.spawn([process.execPath, join(import.meta.dir, '..', 'support', 'tls-model-client.ts'), name], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(fixtures, 'model-server.crt') },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
    await child.exited
    if (!out.trim()) throw new Error(err)
    return JSON.parse(out.trim()) as { chat: string; socket: string; port: number }
  }

  test('the certificate names the model server: the request and the socket reach 127.0.0.1 under its name', async () => {
    const { chat, socket, port } = await connectAs('model.example.test')
    expect(chat).toBe('{"ok":true}')
    expect(socket).toBe(`session.created via model.example.test:${port}`)
  })

  test('a name the certificate does not carry: both refused by certificate verification', async () => {
    const { chat, socket } = await connectAs('other.example.test')
    expect(chat).toStartWith('failed:')
    expect(socket).toStartWith('failed:')
  })
})
