import { S3Client, type S3File } from 'bun'
import type { S3StoreConfig } from '../config'
import { DomainError, upstreamFailed } from '../lib/errors'
import { within } from '../lib/within'
import { checkKey, chunksOf, ObjectExistsError, ObjectTooLargeError, type ObjectStore } from './object-store'

/** How long the health probe waits for the bucket. */
const PROBE_TIMEOUT_MS = 2000
/** A key no object can have (a segment starting with a dot), asked for by the health probe. */
const PROBE_KEY = '.ringbase-probe'

const isMissing = (error: unknown) => (error as { code?: string })?.code === 'NoSuchKey'

/** The MIME type Bun gives the key's extension (a BunFile is only a name until read: no I/O here). */
const typeOfKey = (key: string) => Bun.file(key).type

/** What callers see when the bucket fails: a 502 through the API, the S3 error only in the log. */
const unavailable = (error: unknown) => upstreamFailed('The object store could not be reached', error)
/** A failure as callers see it (a silence is one already). */
const asUnavailable = (error: unknown) => (error instanceof DomainError ? error : unavailable(error))

/**
 * How long the bucket may stay silent: no answer to a request, no byte of an object being read, no part of one being
 * written taken. Bun's S3 client waits for ever on its own, and a silent network held the end of every call (their
 * recordings are stored before the run is closed) until the process restarted.
 */
const SILENCE_MS = 30_000

export type S3StoreOptions = { silenceMs?: number }

const silenceFailure = (silenceMs: number) => unavailable(new Error(`the object store was silent for ${silenceMs} ms`))

/**
 * A promise that fails as `unavailable` once `silenceMs` pass without `heard()`; `pause()` stops counting while the
 * wait is someone else's (an upload's own client sending slowly), `stop()` for good.
 */
function silenceWatch(silenceMs: number) {
  let timer: Timer | undefined
  let fail!: (error: unknown) => void
  const silent = new Promise<never>((_, reject) => {
    fail = reject
  })
  silent.catch(() => {})
  const pause = () => clearTimeout(timer)
  const heard = () => {
    pause()
    timer = setTimeout(() => fail(silenceFailure(silenceMs)), silenceMs)
  }
  heard()
  return { silent, heard, pause, stop: pause }
}

/** `work`, failed as unavailable if it has not settled after `silenceMs` (what it started goes on, unheard). */
const withinSilence = <T>(work: Promise<T>, silenceMs: number): Promise<T> =>
  within(work, silenceMs, () => {
    throw silenceFailure(silenceMs)
  })

/** The object's bytes as they arrive; a wait of `silenceMs` for the next piece fails it as unavailable. */
function readWithinSilence(source: ReadableStream<Uint8Array>, silenceMs: number): ReadableStream<Uint8Array> {
  const reader = source.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await withinSilence(reader.read(), silenceMs)
        if (next.done) controller.close()
        else controller.enqueue(next.value)
      } catch (error) {
        void reader.cancel().catch(() => {})
        controller.error(asUnavailable(error))
      }
    },
    cancel: (reason) => reader.cancel(reason),
  })
}

/**
 * Objects in an S3-compatible bucket, under `prefix/`, through Bun's built-in client. A body is streamed as it arrives
 * (Bun uploads one of more than 5 MiB in parts) and counted on the way: past `maxBytes` the upload is failed before
 * it completes, and S3 shows an object only once its upload completed, so a refused or cut-off body never replaces
 * anything. The parts of such a multipart upload stay in the bucket, invisible, until a lifecycle rule
 * (AbortIncompleteMultipartUpload) removes them: docs/scale-out.md says how to set it.
 */
export function s3ObjectStore(config: S3StoreConfig, options: S3StoreOptions = {}): ObjectStore {
  const silenceMs = options.silenceMs ?? SILENCE_MS
  const client = new S3Client({
    bucket: config.bucket,
    endpoint: config.endpoint,
    region: config.region,
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
  })
  const nameOf = (key: string) => (config.prefix ? `${config.prefix}/${key}` : key)
  const fileOf = (key: string): S3File => {
    checkKey(key)
    return client.file(nameOf(key))
  }
  /** The object's size and type, or null when there is none. */
  const statOf = (file: S3File) =>
    withinSilence(file.stat(), silenceMs).catch((error) => {
      if (isMissing(error)) return null
      throw asUnavailable(error)
    })
  const stream = (file: S3File) => readWithinSilence(file.stream(), silenceMs)

  return {
    kind: 's3',
    location: `s3://${config.bucket}${config.prefix ? `/${config.prefix}` : ''}`,

    async put(key, body, { maxBytes = Infinity, replace = true } = {}) {
      const file = fileOf(key)
      // Not atomic on S3: callers that must never replace (uploads) claim the key in the database first.
      if (!replace && (await statOf(file))) throw new ObjectExistsError(`Object ${JSON.stringify(key)} already exists`)
      const source = chunksOf(body)
      let size = 0
      let bodyError: unknown = null
      // Silence is the bucket's only while the client waits on it, not while the body itself is slow to come.
      const watch = silenceWatch(silenceMs)
      const counted = new ReadableStream<Uint8Array>({
        async pull(controller) {
          watch.pause()
          try {
            const next = await source.next()
            if (next.done) controller.close()
            else {
              size += next.value.byteLength
              if (size > maxBytes) throw new ObjectTooLargeError(maxBytes)
              controller.enqueue(next.value)
            }
            watch.heard()
          } catch (error) {
            bodyError = error
            controller.error(error)
          }
        },
        async cancel() {
          await source.return(undefined)
        },
      })
      try {
        await Promise.race([file.write(new Response(counted), { type: typeOfKey(key) }), watch.silent])
      } catch (error) {
        if (!bodyError) void source.return(undefined)
        throw bodyError ?? asUnavailable(error)
      } finally {
        watch.stop()
      }
      if (bodyError) throw bodyError
      return { size }
    },

    async get(key) {
      const file = fileOf(key)
      const stats = await statOf(file)
      if (!stats) return null
      return {
        size: stats.size,
        type: stats.type || typeOfKey(key),
        stream: () => stream(file),
        bytes: async () => new Uint8Array(await new Response(stream(file)).arrayBuffer()),
        text: () => new Response(stream(file)).text(),
      }
    },

    async exists(key) {
      return (await statOf(fileOf(key))) !== null
    },

    async delete(key) {
      await withinSilence(fileOf(key).delete(), silenceMs).catch((error) => Promise.reject(asUnavailable(error)))
    },

    async status() {
      let timer: Timer | undefined
      const timeout = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS)
      })
      const probe = client
        .file(nameOf(PROBE_KEY))
        .stat()
        .then(
          () => true,
          (error) => isMissing(error),
        )
      const reachable = await Promise.race([probe, timeout])
      clearTimeout(timer)
      return { kind: 's3', reachable }
    },
  }
}
