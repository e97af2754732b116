/** Driving a `ringbase serve` child process (the compiled binary or `bun src/main.ts`) from tests. */

export type ServeProcess = Bun.Subprocess<'ignore', 'pipe', 'pipe'>

/** `ringbase serve --http 127.0.0.1:0 …args`; `command` is the binary, or `[bun, src/main.ts]`. */
export function spawnServe(command: string | string[], args: string[], env: Record<string, string> = {}, cwd?: string): ServeProcess {
  return Bun.spawn([...[command].flat(), 'serve', '--http', '127.0.0.1:0', ...args], {
    cwd, env: { ...process.env, ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe',
  })
}

/** Reads a process's output as it comes; `waitFor` resolves once the text so far matches. */
export function outputOf(stream: ReadableStream<Uint8Array>) {
  let text = ''
  let wakeWaiters: () => void = () => {}
  let nextChunk = new Promise<void>((resolve) => { wakeWaiters = resolve })
  const ended = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true })
      const wake = wakeWaiters
      nextChunk = new Promise<void>((resolve) => { wakeWaiters = resolve })
      wake()
    }
  })()
  return {
    text: () => text,
    async waitFor(pattern: RegExp): Promise<{ match: RegExpMatchArray; text: string }> {
      for (;;) {
        const match = text.match(pattern)
        if (match) return { match, text }
        if (await Promise.race([ended.then(() => true), nextChunk.then(() => false)])) {
          const last = text.match(pattern)
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
