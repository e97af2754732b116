import { randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { link, mkdir, open, rename, rm, stat } from 'node:fs/promises'
import { dirname, join, resolve, sep } from 'node:path'

/** What `put` accepts: a stream is written as it arrives, the rest at once. */
export type ObjectBody = ReadableStream<Uint8Array> | Uint8Array | string | Blob | Response

/** A stored object, read lazily: its size and type are known, its bytes are read when asked for. */
export type StoredObject = {
  size: number
  /** The MIME type the key's extension gives (`application/octet-stream` when it gives none). */
  type: string
  stream(): ReadableStream<Uint8Array>
  bytes(): Promise<Uint8Array>
  text(): Promise<string>
}

/** Whether the store answered a probe, for the health route. */
export type ObjectStoreStatus = { kind: 'local' | 's3'; reachable: boolean }

/**
 * Named blobs (uploaded CSVs, recordings, transcripts, knowledge documents). Keys are relative paths such as
 * `recordings/3/17.wav`: `/`-separated segments of printable characters, none empty, none starting with a dot.
 * Two implementations: files under the data dir (the default) and an S3-compatible bucket (src/storage/s3-object-store.ts).
 */
export interface ObjectStore {
  kind: 'local' | 's3'
  /** Where the objects are, without credentials (`/data/objects`, `s3://bucket/prefix`), for logs. */
  location: string
  /**
   * Stores `body` under `key`, replacing any object there unless `replace` is false (then an object already there is
   * kept and ObjectExistsError thrown). Nothing is left behind when it fails or exceeds `maxBytes`.
   */
  put(key: string, body: ObjectBody, options?: { maxBytes?: number; replace?: boolean }): Promise<{ size: number }>
  /** The object, or null when there is none. */
  get(key: string): Promise<StoredObject | null>
  exists(key: string): Promise<boolean>
  /** Removes the object; removing a missing one is not an error. */
  delete(key: string): Promise<void>
  /** Whether the store can be reached now (a bucket that does not answer within a few seconds cannot). */
  status(): Promise<ObjectStoreStatus>
}

export class InvalidObjectKeyError extends Error {}

export class ObjectExistsError extends Error {}

export class ObjectTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`Object exceeds ${maxBytes} bytes`)
  }
}

/** Partial writes live here until renamed into place; a segment starting with a dot can never be a key. */
/** Uploads in progress, inside the store's root: never part of a backup. */
export const PARTIAL_DIR = '.partial'

// Control characters (incl. NUL) and backslashes: refused so a key means the same path on every platform.
const FORBIDDEN_CHARACTERS = /[\u0000-\u001f\u007f\\]/

/** Throws InvalidObjectKeyError for a key that breaks the rules above. */
export function checkKey(key: string): void {
  const segments = key.split('/')
  const problem =
    key === ''
      ? 'is empty'
      : FORBIDDEN_CHARACTERS.test(key)
        ? 'contains a control character or a backslash'
        : segments.some((segment) => segment === '')
          ? 'has an empty segment (or starts or ends with /)'
          : segments.some((segment) => segment.startsWith('.'))
            ? 'has a segment starting with a dot'
            : null
  if (problem) throw new InvalidObjectKeyError(`Object key ${JSON.stringify(key)} ${problem}`)
}

export async function* chunksOf(body: ObjectBody): AsyncGenerator<Uint8Array> {
  if (typeof body === 'string') yield new TextEncoder().encode(body)
  else if (body instanceof Uint8Array) yield body
  else {
    const stream = body instanceof Response ? body.body : body instanceof Blob ? body.stream() : body
    if (stream) yield* stream
  }
}

/** Objects as files under `root` (normally `<dataDir>/objects`). */
export function localObjectStore(root: string): ObjectStore {
  const rootDir = resolve(root)
  mkdirSync(join(rootDir, PARTIAL_DIR), { recursive: true })

  const pathOf = (key: string): string => {
    checkKey(key)
    const path = resolve(rootDir, key)
    if (!path.startsWith(rootDir + sep))
      throw new InvalidObjectKeyError(`Object key ${JSON.stringify(key)} leaves the store`)
    return path
  }

  return {
    kind: 'local',
    location: rootDir,

    async put(key, body, { maxBytes = Infinity, replace = true } = {}) {
      const target = pathOf(key)
      const partial = join(rootDir, PARTIAL_DIR, randomUUID())
      const handle = await open(partial, 'wx')
      let size = 0
      try {
        try {
          for await (const chunk of chunksOf(body)) {
            size += chunk.byteLength
            if (size > maxBytes) throw new ObjectTooLargeError(maxBytes)
            await handle.write(chunk)
          }
          await handle.sync()
        } finally {
          await handle.close()
        }
        await mkdir(dirname(target), { recursive: true })
        if (replace) {
          await rename(partial, target)
        } else {
          // A hard link appears atomically and only where nothing is: two writers cannot both win.
          await link(partial, target).catch((error: NodeJS.ErrnoException) => {
            throw error.code === 'EEXIST'
              ? new ObjectExistsError(`Object ${JSON.stringify(key)} already exists`)
              : error
          })
          await rm(partial)
        }
      } catch (error) {
        await rm(partial, { force: true })
        throw error
      }
      return { size }
    },

    async get(key) {
      const file = Bun.file(pathOf(key))
      if (!(await file.exists())) return null
      return {
        size: file.size,
        type: file.type,
        stream: () => file.stream(),
        bytes: () => file.bytes(),
        text: () => file.text(),
      }
    },

    async exists(key) {
      const info = await stat(pathOf(key)).catch(() => null)
      return info?.isFile() ?? false
    },

    async delete(key) {
      await rm(pathOf(key), { force: true })
    },

    async status() {
      const info = await stat(rootDir).catch(() => null)
      return { kind: 'local', reachable: info?.isDirectory() ?? false }
    },
  }
}
