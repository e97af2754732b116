/**
 * The compiled `ringbase` (scripts/build.ts), built once per test process: `bun test` runs every file in one process,
 * and the suites that drive the executable (test/binary*.test.ts, test/docs.test.ts, the console's browser suites)
 * all want the same build of the same sources, ~10 s each. Nothing is kept across processes, so a run always tests
 * the sources it was started on: test/preload.ts (bunfig.toml) removes the build once every file has run.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')

let built: { dir: string; binary: string } | null = null

/** The binary's path; callers only read it (copy it, or link to it, to put it elsewhere). */
export function compiledBinary(): string {
  if (built !== null) return built.binary
  const dir = mkdtempSync(join(tmpdir(), 'ringbase-build-'))
  const binary = join(dir, 'ringbase')
  const build = Bun.spawnSync([process.execPath, join(ROOT, 'scripts', 'build.ts'), binary], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (build.exitCode !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`build failed: ${build.stderr.toString()}`)
  }
  built = { dir, binary }
  return binary
}

export function removeCompiledBinary(): void {
  if (built !== null) rmSync(built.dir, { recursive: true, force: true })
  built = null
}
