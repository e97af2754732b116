// Compiles the single executable: `bun run build` → dist/ringbase (migrations, docs page, package.json and the
// console's pack embedded).
//
// No --minify: Elysia's generated request handlers recognise a failed TypeBox decode by
// `error.constructor.name === 'TransformDecodeError'`. --minify-identifiers renames that class (Bun 1.4's --keep-names
// does not keep class names), so a query value that parsed but broke a range (`page=0`, `limit=101`) was let through
// undecoded, as a string, and reached the handler. Minifying saves under 1 % of the binary; the black-box HTTP suites
// run against the compiled binary too (test/binary-http.test.ts) so a build flag cannot change behaviour unseen.
import { mkdtempSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { buildConsole } from './build-console'

const root = join(import.meta.dir, '..')
const outfile = process.argv[2] ?? join(root, 'dist', 'ringbase')
// A folder of its own per build, so that concurrent builds (tests build their own binary) never read a half-written
// pack; below src/ because the entry points' common folder decides where each lands in the binary (the worker must
// stay at voice/flite-worker.js).
const packDir = mkdtempSync(join(root, 'src', '.console-build-'))
const pack = join(packDir, 'console.pack')
await buildConsole(pack)
const result = Bun.spawnSync(
  [
    process.execPath,
    'build',
    '--compile',
    '--no-compile-autoload-bunfig',
    join(root, 'src', 'main.ts'),
    // the built-in voice's worker thread is an entrypoint of its own, embedded as voice/flite-worker.js below the
    // bundle (src/voice/builtin-voice.ts starts it from there; test/binary-voice.test.ts runs it in the binary)
    join(root, 'src', 'voice', 'flite-worker.ts'),
    // likewise the knowledge base's extraction worker, embedded as knowledge/extract-worker.js (src/knowledge/extract.ts)
    join(root, 'src', 'knowledge', 'extract-worker.ts'),
    // and the PostgreSQL client's worker thread, embedded as db/postgres/worker.js (src/db/postgres/client.ts)
    join(root, 'src', 'db', 'postgres', 'worker.ts'),
    // not code: embedded as a file (Bun.embeddedFiles), found by its name by src/api/console/assets.ts
    pack,
    '--outfile',
    outfile,
  ],
  { cwd: root, stdout: 'inherit', stderr: 'inherit' },
)
rmSync(packDir, { recursive: true, force: true })
process.exit(result.exitCode ?? 1)
