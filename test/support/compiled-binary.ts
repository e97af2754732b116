/**
 * The compiled `ringbase` (scripts/build.ts) of the sources as they are now, built once and shared by every test file
 * that drives the executable (test/binary*.test.ts, test/docs.test.ts, the console's browser suites, …): `npm test`
 * runs files in several processes, each file in a fresh module registry, and a build takes ~10 s of a core.
 *
 * The build lives in the temporary directory under a digest of everything it is made from, so a run always tests the
 * sources it was started on, and a source edit makes a new build. Building one removes the builds nobody has used for
 * UNUSED_MS (another checkout's run may be using its own build right now).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')
/** What the build reads (scripts/build.ts): the code, the console, migrations, notices and the locked dependencies. */
const INPUTS = [
  'src',
  'web',
  'scripts',
  'migrations',
  'package.json',
  'package-lock.json',
  'THIRD_PARTY_NOTICES.md',
  'tsconfig.json',
]
const PREFIX = 'ringbase-build-'
const UNUSED_MS = 30 * 60_000

/** Files under `path`, sorted; names starting with a dot are skipped (a build in progress writes `src/.console-build-*`). */
function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path]
  return readdirSync(path)
    .filter((name) => !name.startsWith('.'))
    .sort()
    .flatMap((name) => filesUnder(join(path, name)))
}

function inputsDigest(): string {
  const hasher = new Bun.CryptoHasher('sha256')
  for (const input of INPUTS) {
    for (const file of filesUnder(join(ROOT, input))) {
      hasher.update(file.slice(ROOT.length))
      hasher.update(readFileSync(file))
    }
  }
  return hasher.digest('hex').slice(0, 20)
}

let binary: string | null = null

/** The binary's path; callers only read it (copy it, or link to it, to put it elsewhere). */
export function compiledBinary(): string {
  if (binary !== null) return binary
  const dir = join(tmpdir(), `${PREFIX}${inputsDigest()}`)
  if (existsSync(join(dir, 'ringbase'))) utimesSync(dir, new Date(), new Date())
  else build(dir)
  binary = join(dir, 'ringbase')
  return binary
}

/** Builds into a directory of its own, then moves it to `dir` in one step: a file that finds `dir` finds a whole build. */
function build(dir: string): void {
  const scratch = mkdtempSync(join(tmpdir(), 'ringbase-building-'))
  const built = Bun.spawnSync([process.execPath, join(ROOT, 'scripts', 'build.ts'), join(scratch, 'ringbase')], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (built.exitCode !== 0) {
    rmSync(scratch, { recursive: true, force: true })
    throw new Error(`build failed: ${built.stderr.toString()}`)
  }
  try {
    renameSync(scratch, dir)
  } catch {
    // another test process built the same sources meanwhile: its build is used
    rmSync(scratch, { recursive: true, force: true })
  }
  for (const name of readdirSync(tmpdir())) {
    const other = join(tmpdir(), name)
    if (!name.startsWith(PREFIX) || other === dir) continue
    if (Date.now() - statSync(other, { throwIfNoEntry: false })!.mtimeMs > UNUSED_MS)
      rmSync(other, { recursive: true, force: true })
  }
}
