/**
 * The console's built files (web/, bundled by scripts/build-console.ts) as one pack: each file with its content type
 * and its bytes as is, gzipped and brotli-compressed, compressed once at build time. The compiled binary embeds the
 * pack (scripts/build.ts); `bun src/main.ts` reads it from dist/ (npm start builds it first).
 *
 * Pack layout: a little-endian u32 with the header's length, the header (JSON, `PackHeader`), then the bytes.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export type Encoding = 'br' | 'gzip' | 'identity'

type Span = [offset: number, length: number]

export type PackHeader = { files: { path: string; type: string; encodings: Record<Encoding, Span> }[] }

export type ConsoleFile = { type: string; bodies: Record<Encoding, Uint8Array> }

/** Files by URL path (`/` is index.html; the rest are `/assets/<name>-<hash>.<ext>`). */
export type ConsoleAssets = Map<string, ConsoleFile>

export const PACK_FILE_NAME = 'console.pack'

export function readPack(bytes: Uint8Array): ConsoleAssets {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const headerLength = view.getUint32(0, true)
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + headerLength))) as PackHeader
  const data = bytes.subarray(4 + headerLength)
  const slice = ([offset, length]: Span) => data.subarray(offset, offset + length)
  return new Map(
    header.files.map((file) => [
      file.path,
      {
        type: file.type,
        bodies: {
          br: slice(file.encodings.br),
          gzip: slice(file.encodings.gzip),
          identity: slice(file.encodings.identity),
        },
      },
    ]),
  )
}

/** The pack embedded in the compiled binary, else the one built into dist/ beside the sources; null when neither exists. */
export async function loadConsoleAssets(sourceRoot: string): Promise<ConsoleAssets | null> {
  const embedded = Bun.embeddedFiles.find((file) =>
    /^console(-\w+)?\.pack$/.test((file as Blob & { name?: string }).name ?? ''),
  )
  if (embedded) return readPack(new Uint8Array(await embedded.arrayBuffer()))
  const built = join(sourceRoot, 'dist', PACK_FILE_NAME)
  return existsSync(built) ? readPack(new Uint8Array(readFileSync(built))) : null
}
