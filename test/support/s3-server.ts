import S3rver from '@20minutes/s3rver'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The suffix s3rver's file system store gives an object's bytes. */
const OBJECT_SUFFIX = '._S3rver_object'

export type TestS3Server = {
  endpoint: string
  bucket: string
  /** The environment that points Ringbase at this server (`--object-store` aside). */
  env: Record<string, string>
  /** Every object stored under `prefix/` (keys without the prefix), read from the server's own files. */
  objectKeys(prefix: string): string[]
  /** Stops the server (again: nothing) and removes its files. */
  close(): Promise<void>
}

/** A real S3-compatible server (s3rver, a dev dependency) on 127.0.0.1 with one empty bucket, in a temporary dir. */
export async function startS3Server(bucket = 'ringbase-test'): Promise<TestS3Server> {
  const directory = mkdtempSync(join(tmpdir(), 'ringbase-s3-'))
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  })
  const { port } = await server.run()
  const endpoint = `http://127.0.0.1:${port}`
  let closed = false
  return {
    endpoint,
    bucket,
    env: {
      RINGBASE_S3_ENDPOINT: endpoint,
      RINGBASE_S3_REGION: 'us-east-1',
      // s3rver's fixed credentials.
      RINGBASE_S3_ACCESS_KEY_ID: 'S3RVER',
      RINGBASE_S3_SECRET_ACCESS_KEY: 'S3RVER',
    },
    objectKeys(prefix) {
      const root = join(directory, bucket, prefix)
      if (!existsSync(root)) return []
      return readdirSync(root, { recursive: true, encoding: 'utf8' })
        .filter((name) => name.endsWith(OBJECT_SUFFIX))
        .map((name) => name.slice(0, -OBJECT_SUFFIX.length))
        .sort()
    },
    async close() {
      if (closed) return
      closed = true
      await server.close()
      rmSync(directory, { recursive: true, force: true })
    },
  }
}
