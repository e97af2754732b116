import { closeSync, openSync, readSync, writeSync } from 'node:fs'

/**
 * The few parts of POSIX ustar that a backup needs: regular files only, written and read one after the other with
 * their contents streamed in chunks (recordings and contact files can be large). Readable by `tar -x`.
 */

const BLOCK = 512
const CHUNK = 1 << 20
const NAME_LENGTH = 100
const PREFIX_LENGTH = 155
const MAX_SIZE = 8 ** 11 - 1

export class TarError extends Error {}

function octal(value: number, length: number): string {
  return value.toString(8).padStart(length - 1, '0') + '\0'
}

/** ustar splits a long path at a `/`: up to 155 bytes of prefix, up to 100 of name. */
function splitPath(path: string): { prefix: string; name: string } {
  if (Buffer.byteLength(path) <= NAME_LENGTH) return { prefix: '', name: path }
  for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) {
    const prefix = path.slice(0, slash)
    const name = path.slice(slash + 1)
    if (Buffer.byteLength(prefix) <= PREFIX_LENGTH && Buffer.byteLength(name) <= NAME_LENGTH) return { prefix, name }
  }
  throw new TarError(`path too long for the archive: ${path}`)
}

function checksum(header: Buffer): number {
  let sum = 0
  for (let index = 0; index < BLOCK; index++) sum += index >= 148 && index < 156 ? 0x20 : header[index]
  return sum
}

function headerFor(path: string, size: number, mode: number, mtimeSeconds: number): Buffer {
  if (size > MAX_SIZE) throw new TarError(`file too large for the archive: ${path}`)
  const { prefix, name } = splitPath(path)
  const header = Buffer.alloc(BLOCK)
  header.write(name, 0)
  header.write(octal(mode & 0o7777, 8), 100)
  header.write(octal(0, 8), 108)
  header.write(octal(0, 8), 116)
  header.write(octal(size, 12), 124)
  header.write(octal(mtimeSeconds, 12), 136)
  header.write('0', 156)
  header.write('ustar\0', 257)
  header.write('00', 263)
  header.write(prefix, 345)
  header.write(`${checksum(header).toString(8).padStart(6, '0')}\0 `, 148)
  return header
}

const padding = (size: number) => (BLOCK - (size % BLOCK)) % BLOCK

export type TarWriter = {
  /** Adds `bytes` as the file `path`. */
  addBytes(path: string, bytes: Uint8Array, mode?: number): void
  /** Adds the file at `sourcePath` as `path`, copied in chunks. */
  addFile(path: string, sourcePath: string, size: number, mode?: number): void
  /** Writes the end-of-archive blocks and closes the file. */
  finish(): void
}

/** Writes a new archive to `fd`, an open file descriptor the writer then owns. */
export function tarWriter(fd: number): TarWriter {
  const now = Math.floor(Date.now() / 1000)
  const chunk = Buffer.alloc(CHUNK)
  const pad = (size: number) => writeSync(fd, Buffer.alloc(padding(size)))
  return {
    addBytes(path, bytes, mode = 0o600) {
      writeSync(fd, headerFor(path, bytes.byteLength, mode, now))
      writeSync(fd, bytes)
      pad(bytes.byteLength)
    },
    addFile(path, sourcePath, size, mode = 0o600) {
      writeSync(fd, headerFor(path, size, mode, now))
      const source = openSync(sourcePath, 'r')
      try {
        for (let copied = 0; copied < size; ) {
          const read = readSync(source, chunk, 0, Math.min(CHUNK, size - copied), copied)
          if (read === 0) throw new TarError(`${path} shrank while it was being archived`)
          writeSync(fd, chunk, 0, read)
          copied += read
        }
      } finally {
        closeSync(source)
      }
      pad(size)
    },
    finish() {
      writeSync(fd, Buffer.alloc(BLOCK * 2))
      closeSync(fd)
    },
  }
}

export type TarEntry = { path: string; size: number; mode: number }

/**
 * Reads the archive in `fd` entry by entry: `onEntry` gets each regular file's header and a function that copies its
 * contents to another descriptor (or returns them, for small files). Anything but regular files is refused.
 */
export function readTar(
  fd: number,
  onEntry: (entry: TarEntry, contents: { copyTo(target: number): void; bytes(): Buffer }) => void,
): void {
  const header = Buffer.alloc(BLOCK)
  const chunk = Buffer.alloc(CHUNK)
  let offset = 0
  const readExactly = (buffer: Buffer, length: number) => {
    const read = readSync(fd, buffer, 0, length, offset)
    if (read !== length) throw new TarError('archive truncated')
    offset += length
  }
  for (;;) {
    readExactly(header, BLOCK)
    if (header.every((byte) => byte === 0)) return
    const field = (start: number, length: number) =>
      header.toString('utf8', start, start + length).replace(/\0.*$/s, '')
    const number = (start: number, length: number) => Number.parseInt(field(start, length).trim() || '0', 8)
    if (number(148, 8) !== checksum(header)) throw new TarError('archive damaged (header checksum)')
    const type = field(156, 1)
    if (type !== '0' && type !== '') throw new TarError(`unsupported archive entry type '${type}'`)
    const prefix = field(345, PREFIX_LENGTH)
    const entry: TarEntry = {
      path: prefix ? `${prefix}/${field(0, NAME_LENGTH)}` : field(0, NAME_LENGTH),
      size: number(124, 12),
      mode: number(100, 8),
    }
    const start = offset
    onEntry(entry, {
      copyTo(target) {
        for (let copied = 0; copied < entry.size; ) {
          const read = readSync(fd, chunk, 0, Math.min(CHUNK, entry.size - copied), start + copied)
          if (read === 0) throw new TarError('archive truncated')
          writeSync(target, chunk, 0, read)
          copied += read
        }
      },
      bytes() {
        const bytes = Buffer.alloc(entry.size)
        if (readSync(fd, bytes, 0, entry.size, start) !== entry.size) throw new TarError('archive truncated')
        return bytes
      },
    })
    offset = start + entry.size + padding(entry.size)
  }
}
