import { S3Client, type S3File } from 'bun'
import type { S3StoreConfig } from '../config'
import { upstreamFailed } from '../lib/errors'
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

/**
 * Objects in an S3-compatible bucket, under `prefix/`, through Bun's built-in client. A body is streamed as it arrives
 * (Bun uploads one of more than 5 MiB in parts) and counted on the way: past `maxBytes` the upload is failed before
 * it completes, and S3 shows an object only once its upload completed, so a refused or cut-off body never replaces
 * anything. The parts of such a multipart upload stay in the bucket, invisible, until a lifecycle rule
 * (AbortIncompleteMultipartUpload) removes them: docs/scale-out.md says how to set it.
 */
export function s3ObjectStore(config: S3StoreConfig): ObjectStore {
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
    file.stat().catch((error) => {
      if (isMissing(error)) return null
      throw unavailable(error)
    })
  const read = <T>(reading: Promise<T>) => reading.catch((error) => Promise.reject(unavailable(error)))

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
      const counted = new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const next = await source.next()
            if (next.done) return controller.close()
            size += next.value.byteLength
            if (size > maxBytes) throw new ObjectTooLargeError(maxBytes)
            controller.enqueue(next.value)
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
        await file.write(new Response(counted), { type: typeOfKey(key) })
      } catch (error) {
        throw bodyError ?? unavailable(error)
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
        stream: () => file.stream(),
        bytes: () => read(file.bytes()),
        text: () => read(file.text()),
      }
    },

    async exists(key) {
      return (await statOf(fileOf(key))) !== null
    },

    async delete(key) {
      await read(fileOf(key).delete())
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
