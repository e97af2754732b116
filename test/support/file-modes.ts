import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

/** Every path under `dir` (`.` for itself) as `path mode` lines, the mode in octal. */
export function modesUnder(dir: string): string[] {
  const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8)
  return [
    `. ${modeOf(dir)}`,
    ...readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((path) => `${path} ${modeOf(join(dir, path))}`),
  ]
}

/** The lines of `modesUnder(dir)` that are not private: folders other than 0700, files other than 0600. */
export function notPrivate(dir: string): string[] {
  return modesUnder(dir).filter((line) => {
    const [path, mode] = line.split(' ')
    return mode !== (statSync(join(dir, path)).isDirectory() ? '700' : '600')
  })
}
