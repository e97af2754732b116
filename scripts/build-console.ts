// Bundles the admin console (web/index.html and what it imports) into dist/console.pack: hashed file names,
// minified, each file stored as is, gzipped and brotli-compressed (the layout is src/api/console/assets.ts's).
// `bun scripts/build-console.ts [outfile]`; scripts/build.ts runs it and embeds the pack in the binary.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import type { Encoding, PackHeader } from '../src/api/console/assets'

const root = join(import.meta.dir, '..')

/** Builds the pack; returns the size of each file's gzipped bytes by URL path, for the size budget. */
export async function buildConsole(outfile = join(root, 'dist', 'console.pack')): Promise<Record<string, number>> {
  const result = await Bun.build({
    entrypoints: [join(root, 'web', 'index.html')],
    minify: true,
    splitting: true,
    naming: { entry: '[name].[ext]', chunk: 'assets/[name]-[hash].[ext]', asset: 'assets/[name]-[hash].[ext]' },
    define: { 'process.env.NODE_ENV': '"production"' },
    // Absolute asset URLs: a file imported for its URL (the web call's worklet) resolves from any page.
    publicPath: '/',
  })
  if (!result.success) throw new AggregateError(result.logs, 'console build failed')
  const header: PackHeader = { files: [] }
  const chunks: Uint8Array[] = []
  let offset = 0
  const append = (bytes: Uint8Array): [number, number] => {
    chunks.push(bytes)
    offset += bytes.length
    return [offset - bytes.length, bytes.length]
  }
  const gzippedSizes: Record<string, number> = {}
  for (const output of result.outputs) {
    const relative = output.path.replace(/^\.\//, '')
    const path = relative.endsWith('.html') ? '/' : `/${relative}`
    const identity = new Uint8Array(await output.arrayBuffer())
    const gzip = gzipSync(identity, { level: 9 })
    const br = brotliCompressSync(identity, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length },
    })
    const encodings: Record<Encoding, [number, number]> = {
      identity: append(identity),
      gzip: append(gzip),
      br: append(br),
    }
    header.files.push({ path, type: output.type, encodings })
    gzippedSizes[path] = gzip.length
  }
  const headerBytes = new TextEncoder().encode(JSON.stringify(header))
  const length = new Uint8Array(4)
  new DataView(length.buffer).setUint32(0, headerBytes.length, true)
  mkdirSync(dirname(outfile), { recursive: true })
  // Written beside it, then renamed over it: a server in dev mode (src/api/console/dev.ts) never reads half a pack.
  writeFileSync(`${outfile}.tmp`, Buffer.concat([length, headerBytes, ...chunks]))
  renameSync(`${outfile}.tmp`, outfile)
  return gzippedSizes
}

if (import.meta.main) {
  const sizes = await buildConsole(process.argv[2])
  for (const [path, size] of Object.entries(sizes)) console.log(`${path}  ${(size / 1024).toFixed(1)} KiB gzipped`)
}
