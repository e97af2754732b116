import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  InvalidObjectKeyError,
  localObjectStore,
  ObjectExistsError,
  ObjectTooLargeError,
  type ObjectStore,
} from '../../src/storage/object-store'

let root: string
let store: ObjectStore
beforeEach(() => {
  root = join(mkdtempSync(join(tmpdir(), 'ringbase-objects-')), 'objects')
  store = localObjectStore(root)
})
afterEach(() => rmSync(join(root, '..'), { recursive: true, force: true }))

const streamOf = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
      controller.close()
    },
  })

/** Every file under the root, partial writes included. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(root.length + 1))
}

describe('local object store', () => {
  test.each([
    ['a string', 'hello', 5],
    ['bytes', new Uint8Array([1, 2, 3]), 3],
    ['a stream', streamOf('ab', 'cd', 'e'), 5],
    ['a blob', new Blob(['blob!']), 5],
    ['a response', new Response('response'), 8],
  ] as const)('put stores %s and reports its size', async (_label, body, size) => {
    expect(await store.put('campaigns/1/file.csv', body)).toEqual({ size })
    expect(await store.exists('campaigns/1/file.csv')).toBe(true)
    expect((await store.file('campaigns/1/file.csv'))!.size).toBe(size)
    expect(filesUnder(root)).toEqual(['campaigns/1/file.csv'])
  })

  test('put replaces an existing object', async () => {
    await store.put('recordings/1/2.wav', 'first')
    await store.put('recordings/1/2.wav', 'second')
    expect(await (await store.file('recordings/1/2.wav'))!.text()).toBe('second')
  })

  test('a body over maxBytes is refused and nothing is left behind, not even the old object being replaced', async () => {
    await store.put('a/b.csv', 'old')
    await expect(store.put('a/b.csv', streamOf('12345', '67890'), { maxBytes: 8 })).rejects.toBeInstanceOf(
      ObjectTooLargeError,
    )
    await expect(store.put('a/c.csv', 'toolong', { maxBytes: 3 })).rejects.toBeInstanceOf(ObjectTooLargeError)
    expect(await (await store.file('a/b.csv'))!.text()).toBe('old')
    expect(filesUnder(root)).toEqual(['a/b.csv'])
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
    expect(filesUnder(root)).toEqual([])
  })

  test('missing objects: file is null, exists is false, delete is a no-op', async () => {
    expect(await store.file('nope.txt')).toBeNull()
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
    expect(() => store.resolve(key)).toThrow(InvalidObjectKeyError)
    await expect(store.put(key, 'x')).rejects.toBeInstanceOf(InvalidObjectKeyError)
    await expect(store.file(key)).rejects.toBeInstanceOf(InvalidObjectKeyError)
    await expect(store.exists(key)).rejects.toBeInstanceOf(InvalidObjectKeyError)
    await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidObjectKeyError)
  })

  test('resolve gives a path inside the root', () => {
    expect(store.resolve('campaigns/1/x y.csv')).toBe(join(root, 'campaigns/1/x y.csv'))
  })
})

describe('put without replacing', () => {
  test('stores a new object; over an existing one it throws ObjectExistsError, keeps the first and leaves nothing behind', async () => {
    expect(await store.put('campaigns/1/a.csv', 'first', { replace: false })).toEqual({ size: 5 })
    await expect(store.put('campaigns/1/a.csv', streamOf('sec', 'ond'), { replace: false })).rejects.toBeInstanceOf(
      ObjectExistsError,
    )
    expect(await (await store.file('campaigns/1/a.csv'))!.text()).toBe('first')
    expect(filesUnder(root)).toEqual(['campaigns/1/a.csv'])
  })
})
