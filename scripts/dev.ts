// `npm run dev`: the server from the sources with the console in dev mode. The console is built into dist/console.pack,
// built again whenever a file of web/ changes, and every open console reloads (src/api/console/dev.ts). Arguments go to
// `ringbase serve` (e.g. `npm run dev -- --http 127.0.0.1:8000 --dir ./data`).
import { watch } from 'node:fs'
import { join } from 'node:path'
import { buildConsole } from './build-console'

const root = join(import.meta.dir, '..')
const REBUILD_AFTER_MS = 100

async function rebuild(): Promise<void> {
  const started = performance.now()
  try {
    await buildConsole()
    console.error(`console rebuilt in ${Math.round(performance.now() - started)} ms`)
  } catch (error) {
    // A syntax error while typing: the last good build stays served until the next save.
    console.error('console build failed:', error instanceof AggregateError ? error.errors : error)
  }
}

await rebuild()
let pending: ReturnType<typeof setTimeout> | null = null
watch(join(root, 'web'), { recursive: true }, () => {
  if (pending) clearTimeout(pending)
  pending = setTimeout(() => {
    pending = null
    void rebuild()
  }, REBUILD_AFTER_MS)
})
const server = Bun.spawn([process.execPath, join(root, 'src', 'main.ts'), 'serve', ...process.argv.slice(2)], {
  env: { ...process.env, RINGBASE_CONSOLE_DEV: '1' },
  stdio: ['inherit', 'inherit', 'inherit'],
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.kill(signal))
process.exit(await server.exited)
