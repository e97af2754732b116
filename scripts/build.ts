// Compiles the single executable: `bun run build` → dist/ringbase (migrations, docs page and package.json embedded).
import { join } from 'node:path'

const root = join(import.meta.dir, '..')
const outfile = process.argv[2] ?? join(root, 'dist', 'ringbase')
const result = Bun.spawnSync(
  [process.execPath, 'build', '--compile', '--minify', '--no-compile-autoload-bunfig', join(root, 'src', 'main.ts'),
    // the built-in voice's worker thread is an entrypoint of its own (src/voice/builtin-voice.ts starts it)
    join(root, 'src', 'voice', 'flite-worker.ts'), '--outfile', outfile],
  { cwd: root, stdout: 'inherit', stderr: 'inherit' },
)
process.exit(result.exitCode ?? 1)
