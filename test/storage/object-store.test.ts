import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { encodeWav, interleavedPieces, wavStream } from '../../src/lib/wav'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  InvalidObjectKeyError,
  localObjectStore,
  ObjectExistsError,
  ObjectTooLargeError,
  type ObjectStore,
} from '../../src/storage/object-store'
import { s3ObjectStore } from '../../src/storage/s3-object-store'
import { DomainError } from '../../src/lib/errors'
import { startS3Server, type TestS3Server } from '../support/s3-server'

/** A store under test and every object it holds (partial writes included), as keys. */
type Harness = { store: ObjectStore; storedKeys(): string[]; close(): void }

let s3: TestS3Server
beforeAll(async () => {
  s3 = await startS3Server()
})
afterAll(() => s3.close())

function localHarness(): Harness {
  const root = join(mkdtempSync(join(tmpdir(), 'ringbase-objects-')), 'objects')
  return {
    store: localObjectStore(root),
    storedKeys: () =>
      readdirSync(root, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name).slice(root.length + 1))
        .sort(),
    close: () => rmSync(join(root, '..'), { recursive: true, force: true }),
  }
}

let prefixes = 0
/** Each test gets its own prefix of the one bucket, so it sees only its own objects. */
function s3Harness(): Harness {
  const prefix = `ringbase/test-${++prefixes}`
  const store = s3ObjectStore({
    bucket: s3.bucket,
    prefix,
    endpoint: s3.endpoint,
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
  })
  return { store, storedKeys: () => s3.objectKeys(prefix), close: () => {} }
}

const streamOf = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
      controller.close()
    },
  })

describe.each([
  ['local', localHarness],
  ['s3', s3Harness],
] as const)('%s object store', (_kind, makeHarness) => {
  let harness: Harness
  let store: ObjectStore
  beforeEach(() => {
    harness = makeHarness()
    store = harness.store
  })
  afterEach(() => harness.close())

  test.each([
    ['a string', 'hello', 5],
    ['bytes', new Uint8Array([1, 2, 3]), 3],
    ['a stream', streamOf('ab', 'cd', 'e'), 5],
    ['a blob', new Blob(['blob!']), 5],
    ['a response', new Response('response'), 8],
  ] as const)('put stores %s and reports its size', async (_label, body, size) => {
    expect(await store.put('campaigns/1/file.csv', body)).toEqual({ size })
    expect(await store.exists('campaigns/1/file.csv')).toBe(true)
    expect((await store.get('campaigns/1/file.csv'))!.size).toBe(size)
    expect(harness.storedKeys()).toEqual(['campaigns/1/file.csv'])
  })

  test('put replaces an existing object', async () => {
    await store.put('recordings/1/2.wav', 'first')
    await store.put('recordings/1/2.wav', 'second')
    expect(await (await store.get('recordings/1/2.wav'))!.text()).toBe('second')
  })

  test('a body over maxBytes is refused and nothing is left behind, not even the old object being replaced', async () => {
    await store.put('a/b.csv', 'old')
    await expect(store.put('a/b.csv', streamOf('12345', '67890'), { maxBytes: 8 })).rejects.toBeInstanceOf(
      ObjectTooLargeError,
    )
    await expect(store.put('a/c.csv', 'toolong', { maxBytes: 3 })).rejects.toBeInstanceOf(ObjectTooLargeError)
    expect(await (await store.get('a/b.csv'))!.text()).toBe('old')
    expect(harness.storedKeys()).toEqual(['a/b.csv'])
  })

  test('a body refused past 5 MiB (where an S3 upload goes multipart) leaves the old object and nothing else', async () => {
    await store.put('big.bin', 'old')
    const mebibyte = new Uint8Array(1024 * 1024)
    let sent = 0
    const large = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 8) controller.enqueue(mebibyte)
        else controller.close()
      },
    })
    await expect(store.put('big.bin', large, { maxBytes: 7 * 1024 * 1024 })).rejects.toBeInstanceOf(ObjectTooLargeError)
    expect(await (await store.get('big.bin'))!.text()).toBe('old')
    expect(harness.storedKeys()).toEqual(['big.bin'])
  })

  test("a call's recording streamed a second at a time, past 5 MiB (multipart on S3), reads back byte for byte", async () => {
    const seconds = 200
    const caller = Int16Array.from({ length: seconds * 8000 }, (_, index) => (index * 7) % 30_000)
    const agent = Int16Array.from({ length: seconds * 8000 - 1234 }, (_, index) => -((index * 3) % 20_000))
    expect(
      await store.put(
        'recordings/1/9.wav',
        wavStream(interleavedPieces([caller, agent], 0, caller.length, 8000), caller.length, 8000, 2),
      ),
    ).toEqual({
      size: 44 + seconds * 8000 * 4,
    })
    const stored = await (await store.get('recordings/1/9.wav'))!.bytes()
    const padded = new Int16Array(caller.length)
    padded.set(agent)
    expect(Buffer.compare(stored, encodeWav([caller, padded], 8000))).toBe(0)
  })

  test('a body exactly maxBytes long is accepted', async () => {
    expect(await store.put('exact.bin', streamOf('1234', '5678'), { maxBytes: 8 })).toEqual({ size: 8 })
  })

  test('a stream that fails midway leaves nothing behind', async () => {
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('partial'))
        controller.error(new Error('client went away'))
      },
    })
    await expect(store.put('broken.csv', failing)).rejects.toThrow('client went away')
    expect(harness.storedKeys()).toEqual([])
  })

  test('missing objects: file is null, exists is false, delete is a no-op', async () => {
    expect(await store.get('nope.txt')).toBeNull()
    expect(await store.exists('nope.txt')).toBe(false)
    await store.delete('nope.txt')
    await store.put('yes.txt', 'x')
    await store.delete('yes.txt')
    expect(await store.exists('yes.txt')).toBe(false)
  })

  test('a directory is not an object', async () => {
    await store.put('dir/file.txt', 'x')
    expect(await store.exists('dir')).toBe(false)
  })

  test.each([
    '',
    '../outside',
    'a/../../outside',
    '/etc/passwd',
    'a\\b',
    'a\u0000b',
    'a//b',
    'a/',
    '.hidden',
    'a/./b',
    '.partial/x',
    'a/\n',
  ])('refuses the key %j everywhere', async (key) => {
    await expect(store.put(key, 'x')).rejects.toBeInstanceOf(InvalidObjectKeyError)
    await expect(store.get(key)).rejects.toBeInstanceOf(InvalidObjectKeyError)
    await expect(store.exists(key)).rejects.toBeInstanceOf(InvalidObjectKeyError)
    await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidObjectKeyError)
  })

  test('get gives the size, the type of the extension and the bytes, as a stream too', async () => {
    await store.put('recordings/1/2.wav', new Uint8Array([82, 73, 70, 70]))
    const object = (await store.get('recordings/1/2.wav'))!
    expect(object).toMatchObject({ size: 4, type: 'audio/x-wav' })
    expect([...(await object.bytes())]).toEqual([82, 73, 70, 70])
    expect(await new Response(object.stream()).text()).toBe('RIFF')
  })

  test('a key with spaces and unicode round-trips', async () => {
    await store.put('campaigns/1/x y é.csv', 'a,b')
    expect(await (await store.get('campaigns/1/x y é.csv'))!.text()).toBe('a,b')
  })

  test('status says the store is reachable', async () => {
    expect((await store.status()).reachable).toBe(true)
  })

  test('put with replace: false stores a new object; over an existing one it throws ObjectExistsError, keeps the first and leaves nothing behind', async () => {
    expect(await store.put('campaigns/1/a.csv', 'first', { replace: false })).toEqual({ size: 5 })
    await expect(store.put('campaigns/1/a.csv', streamOf('sec', 'ond'), { replace: false })).rejects.toBeInstanceOf(
      ObjectExistsError,
    )
    expect(await (await store.get('campaigns/1/a.csv'))!.text()).toBe('first')
    expect(harness.storedKeys()).toEqual(['campaigns/1/a.csv'])
  })
})

describe('s3 object store, bucket out of reach', () => {
  const unreachable = s3ObjectStore({
    bucket: 'ringbase-test',
    prefix: '',
    endpoint: 'http://127.0.0.1:9',
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
  })

  test('status says unreachable; reads and writes fail as an upstream failure (502), never as a missing object', async () => {
    expect(await unreachable.status()).toEqual({ kind: 's3', reachable: false })
    for (const attempt of [
      () => unreachable.get('a.csv'),
      () => unreachable.exists('a.csv'),
      () => unreachable.put('a.csv', 'x'),
      () => unreachable.delete('a.csv'),
    ]) {
      const error = await attempt().then(
        () => null,
        (failure) => failure,
      )
      expect(error).toBeInstanceOf(DomainError)
      expect((error as DomainError).kind).toBe('upstream_failed')
    }
  })

  test('wrong credentials count as unreachable too', async () => {
    const wrongSecret = s3ObjectStore({
      bucket: s3.bucket,
      prefix: '',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      accessKeyId: 'S3RVER',
      secretAccessKey: 'not-the-secret',
    })
    expect((await wrongSecret.status()).reachable).toBe(false)
  })
})

describe('s3 object store, bucket gone silent', () => {
  const silenceMs = 200
  const storeAt = (endpoint: string) =>
    s3ObjectStore(
      { bucket: 'b', prefix: '', endpoint, region: 'us-east-1', accessKeyId: 'a', secretAccessKey: 'b' },
      { silenceMs },
    )
  const failureOf = (attempt: Promise<unknown>) =>
    attempt.then(
      () => null,
      (failure) => failure,
    )
  const expectUpstreamFailure = (error: unknown) => {
    expect(error).toBeInstanceOf(DomainError)
    expect((error as DomainError).kind).toBe('upstream_failed')
  }

  test('a bucket that takes the connection and never answers fails every operation instead of waiting for ever', async () => {
    const sockets: Socket[] = []
    const silent = createServer((socket) => {
      sockets.push(socket)
      socket.on('data', () => {})
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const store = storeAt(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`)
    try {
      for (const attempt of [
        () => store.get('a.wav'),
        () => store.exists('a.wav'),
        () => store.delete('a.wav'),
        () => store.put('a.wav', 'x'),
        () => store.put('a.wav', streamOf('a', 'b')),
      ])
        expectUpstreamFailure(await failureOf(attempt()))
    } finally {
      for (const socket of sockets) socket.destroy()
      silent.close()
    }
  })

  test("an object whose bytes stop coming fails its reader; a slow body being stored is not the bucket's silence", async () => {
    const stalled = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(request) {
        const headers = { 'content-length': '1000', etag: '"e"', 'last-modified': new Date().toUTCString() }
        if (request.method === 'HEAD') return new Response(null, { headers })
        if (request.method === 'PUT')
          return request.arrayBuffer().then(() => new Response(null, { headers: { etag: '"e"' } }))
        return new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new Uint8Array(10))
            },
          }),
          { headers },
        )
      },
    })
    const store = storeAt(`http://127.0.0.1:${stalled.port}`)
    try {
      const object = await store.get('a.wav')
      expect(object?.size).toBe(1000)
      expectUpstreamFailure(await failureOf(object!.bytes()))
      expectUpstreamFailure(await failureOf(object!.text()))
      expectUpstreamFailure(await failureOf(new Response(object!.stream()).arrayBuffer()))

      let sendRest!: () => void
      const slowBody = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('first half, '))
          sendRest = () => {
            controller.enqueue(new TextEncoder().encode('then the rest'))
            controller.close()
          }
        },
      })
      const stored = store.put('b.txt', slowBody)
      await Bun.sleep(silenceMs * 3)
      sendRest()
      expect(await stored).toEqual({ size: 25 })
    } finally {
      stalled.stop(true)
    }
  })
})
