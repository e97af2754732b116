import { deflateRawSync, inflateRawSync } from 'node:zlib'

/**
 * Just enough ZIP for Office files: reading every entry with the total unpacked size bounded (a zip bomb stops at the
 * bound instead of filling memory, whatever the headers claim), and writing entries (stored, or deflated).
 */

export type ZipEntry = { name: string; data: Uint8Array }

export class ZipError extends Error {}

const END_OF_CENTRAL_DIRECTORY = 0x06054b50
const CENTRAL_DIRECTORY_ENTRY = 0x02014b50
const LOCAL_FILE_HEADER = 0x04034b50
const STORED = 0
const DEFLATED = 8
/** The end record is 22 bytes plus a comment of at most 65535. */
const END_SEARCH_BYTES = 22 + 0xffff

function findEndRecord(view: DataView): number {
  const lowest = Math.max(0, view.byteLength - END_SEARCH_BYTES)
  for (let offset = view.byteLength - 22; offset >= lowest; offset--) {
    if (view.getUint32(offset, true) === END_OF_CENTRAL_DIRECTORY) return offset
  }
  throw new ZipError('not a ZIP file (no end of central directory)')
}

/** Every file entry, unpacked; throws ZipError when the archive is broken or unpacks to more than `maxTotalBytes`. */
export function readZip(
  bytes: Uint8Array,
  { maxTotalBytes, maxEntries }: { maxTotalBytes: number; maxEntries: number },
): ZipEntry[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (bytes.byteLength < 22) throw new ZipError('not a ZIP file (too short)')
  const end = findEndRecord(view)
  const count = view.getUint16(end + 10, true)
  let offset = view.getUint32(end + 16, true)
  if (count > maxEntries) throw new ZipError(`the archive has ${count} entries, more than ${maxEntries}`)
  const decoder = new TextDecoder()
  const entries: ZipEntry[] = []
  let total = 0
  for (let index = 0; index < count; index++) {
    if (offset + 46 > bytes.byteLength || view.getUint32(offset, true) !== CENTRAL_DIRECTORY_ENTRY)
      throw new ZipError('broken central directory')
    const method = view.getUint16(offset + 10, true)
    const compressedSize = view.getUint32(offset + 20, true)
    const nameLength = view.getUint16(offset + 28, true)
    const extraLength = view.getUint16(offset + 30, true)
    const commentLength = view.getUint16(offset + 32, true)
    const localOffset = view.getUint32(offset + 42, true)
    const name = decoder.decode(bytes.subarray(offset + 46, offset + 46 + nameLength))
    offset += 46 + nameLength + extraLength + commentLength
    if (name.endsWith('/')) continue
    if (localOffset + 30 > bytes.byteLength || view.getUint32(localOffset, true) !== LOCAL_FILE_HEADER)
      throw new ZipError(`broken entry ${name}`)
    const start = localOffset + 30 + view.getUint16(localOffset + 26, true) + view.getUint16(localOffset + 28, true)
    if (start + compressedSize > bytes.byteLength) throw new ZipError(`entry ${name} runs past the end of the file`)
    const packed = bytes.subarray(start, start + compressedSize)
    const budget = maxTotalBytes - total
    let data: Uint8Array
    if (method === STORED) data = packed
    else if (method === DEFLATED) {
      try {
        data = inflateRawSync(packed, { maxOutputLength: Math.max(1, budget) })
      } catch (error) {
        if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
          throw new ZipError(`the archive unpacks to more than ${maxTotalBytes} bytes`)
        throw new ZipError(`entry ${name} is corrupt`)
      }
    } else throw new ZipError(`entry ${name} uses compression method ${method}, which is not supported`)
    total += data.byteLength
    if (total > maxTotalBytes) throw new ZipError(`the archive unpacks to more than ${maxTotalBytes} bytes`)
    entries.push({ name, data })
  }
  return entries
}

/** A ZIP of `entries`, stored uncompressed unless `deflate` (stored: what is read back is exactly what was checked). */
export function writeZip(entries: ZipEntry[], { deflate = false }: { deflate?: boolean } = {}): Uint8Array {
  const encoder = new TextEncoder()
  const locals: Uint8Array[] = []
  const centrals: Uint8Array[] = []
  let offset = 0
  for (const entry of entries) {
    const nameBytes = encoder.encode(entry.name)
    const crc = Bun.hash.crc32(entry.data)
    const data = deflate ? new Uint8Array(deflateRawSync(entry.data)) : entry.data
    const method = deflate ? DEFLATED : STORED
    const local = new Uint8Array(30 + nameBytes.length)
    const localView = new DataView(local.buffer)
    localView.setUint32(0, LOCAL_FILE_HEADER, true)
    localView.setUint16(4, 20, true)
    localView.setUint16(8, method, true)
    localView.setUint32(14, crc, true)
    localView.setUint32(18, data.byteLength, true)
    localView.setUint32(22, entry.data.byteLength, true)
    localView.setUint16(26, nameBytes.length, true)
    local.set(nameBytes, 30)
    const central = new Uint8Array(46 + nameBytes.length)
    const centralView = new DataView(central.buffer)
    centralView.setUint32(0, CENTRAL_DIRECTORY_ENTRY, true)
    centralView.setUint16(4, 20, true)
    centralView.setUint16(6, 20, true)
    centralView.setUint16(10, method, true)
    centralView.setUint32(16, crc, true)
    centralView.setUint32(20, data.byteLength, true)
    centralView.setUint32(24, entry.data.byteLength, true)
    centralView.setUint16(28, nameBytes.length, true)
    centralView.setUint32(42, offset, true)
    central.set(nameBytes, 46)
    locals.push(local, data)
    centrals.push(central)
    offset += local.byteLength + data.byteLength
  }
  const centralSize = centrals.reduce((sum, part) => sum + part.byteLength, 0)
  const end = new Uint8Array(22)
  const endView = new DataView(end.buffer)
  endView.setUint32(0, END_OF_CENTRAL_DIRECTORY, true)
  endView.setUint16(8, entries.length, true)
  endView.setUint16(10, entries.length, true)
  endView.setUint32(12, centralSize, true)
  endView.setUint32(16, offset, true)
  return new Uint8Array(Buffer.concat([...locals, ...centrals, end]))
}
