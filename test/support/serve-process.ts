/** Driving a `ringbase serve` child process (the compiled binary or `bun src/main.ts`) from tests. */
import { Database } from 'bun:sqlite'
import { join } from 'node:path'

export type ServeProcess = Bun.Subprocess<'ignore', 'pipe', 'pipe'>

/** `ringbase serve --http 127.0.0.1:0 …args`; `command` is the binary, or `[bun, src/main.ts]`. */
export function spawnServe(
  command: string | string[],
  args: string[],
  env: Record<string, string> = {},
  cwd?: string,
): ServeProcess {
  return Bun.spawn([...[command].flat(), 'serve', '--http', '127.0.0.1:0', ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
}

/** Reads a process's output as it comes; `waitFor` resolves once the text so far matches. */
export function outputOf(stream: ReadableStream<Uint8Array>) {
  let text = ''
  let wakeWaiters: () => void = () => {}
  let nextChunk = new Promise<void>((resolve) => {
    wakeWaiters = resolve
  })
  const ended = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true })
      const wake = wakeWaiters
      nextChunk = new Promise<void>((resolve) => {
        wakeWaiters = resolve
      })
      wake()
    }
  })()
  return {
    text: () => text,
    /** `from`: search only the output after this offset (a long output is not rescanned on every chunk). */
    async waitFor(pattern: RegExp, from = 0): Promise<{ match: RegExpMatchArray; text: string }> {
      for (;;) {
        const match = text.slice(from).match(pattern)
        if (match) return { match, text }
        if (await Promise.race([ended.then(() => true), nextChunk.then(() => false)])) {
          const last = text.slice(from).match(pattern)
          if (last) return { match: last, text }
          throw new Error(`output ended before ${pattern}: ${text}`)
        }
      }
    },
    all: async () => {
      await ended
      return text
    },
  }
}

/** The base URL `serve` logs once it listens. */
export async function listeningUrl(output: ReturnType<typeof outputOf>): Promise<string> {
  return (await output.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/)).match[1]
}

/** `ringbase` from source, for tests that need a real process but not the compiled binary. */
export const SOURCE_COMMAND = [process.execPath, join(import.meta.dir, '..', '..', 'src', 'main.ts')]

/** Starts `serve` and resolves once it listens, with its base URL; its output keeps being read. */
export async function startServe(command: string | string[], args: string[], env: Record<string, string> = {}) {
  const server = spawnServe(command, args, env)
  const output = outputOf(server.stdout)
  return { server, output, url: await listeningUrl(output) }
}

/** A JSON call with the key; anything but 200 throws with the answer. */
export async function callApi(base: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const json = await response.json()
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

/** Rows of a query on the database of a data dir a server process uses, opened read-only for the query only. */
export function readDataDir<T>(dataDir: string, sql: string): T[] {
  const db = new Database(join(dataDir, 'ringbase.db'), { readonly: true })
  try {
    return db.query<T, []>(sql).all()
  } finally {
    db.close()
  }
}

/** Uploads `csv` through the server's signed URL, as a client would; returns the file key a campaign names. */
export async function uploadCsvTo(base: string, key: string, csv: string, fileName: string): Promise<string> {
  const grant = await callApi(base, key, 'POST', '/api/v1/s3/presigned-upload-url', {
    file_name: fileName,
    file_size: csv.length,
  })
  const put = await fetch(grant.upload_url.replace(/^https?:\/\/[^/]+/, base), {
    method: 'PUT',
    body: csv,
    headers: { 'content-type': 'text/csv' },
  })
  if (put.status !== 200) throw new Error(`upload ${fileName}: ${put.status} ${await put.text()}`)
  return grant.file_key
}
