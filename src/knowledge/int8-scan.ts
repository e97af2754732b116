/**
 * The search's inner loop in WebAssembly SIMD: the dot product of every int8 row of a document with the query (held
 * as int16), eight lanes at a time, each sum times the row's scale. JavaScript does one multiply-add per step; this
 * does sixteen, and reads a quarter of the bytes float32 rows would. The module is ~150 bytes, assembled here from
 * its instructions (no toolchain, no binary file), and imports the memory each document's vectors live in.
 *
 * scan(rows, count, dimension, query, out): for row r < count,
 *   out[r] = Σ_i rows[r·dimension + i] · query[i]     (i8 × i16 summed in i32, stored as f32; `dimension` % 32 = 0)
 */

const I32 = 0x7f
const V128 = 0x7b
const op = {
  block: [0x02, 0x40],
  loop: [0x03, 0x40],
  end: [0x0b],
  brIf: (depth: number) => [0x0d, depth],
  get: (local: number) => [0x20, local],
  set: (local: number) => [0x21, local],
  tee: (local: number) => [0x22, local],
  i32: (value: number) => [0x41, ...signedLeb(value)],
  i32Add: [0x6a],
  i32Shl: [0x74],
  i32GeU: [0x4f],
  i32LtU: [0x49],
  f32Store: [0x38, 2, 0],
  f32FromI32: [0xb2],
  v128Load: (offset: number) => [0xfd, 0x00, 0, ...unsignedLeb(offset)],
  v128Load8x8s: (offset: number) => [0xfd, 0x01, 0, ...unsignedLeb(offset)],
  v128Zero: [0xfd, 0x0c, ...new Array(16).fill(0)],
  i32x4Lane: (lane: number) => [0xfd, 0x1b, lane],
  i32x4Add: [0xfd, 0xae, 0x01],
  i32x4DotI16x8: [0xfd, 0xba, 0x01],
}

function unsignedLeb(value: number): number[] {
  const bytes: number[] = []
  do {
    let byte = value & 0x7f
    value >>>= 7
    if (value !== 0) byte |= 0x80
    bytes.push(byte)
  } while (value !== 0)
  return bytes
}

function signedLeb(value: number): number[] {
  const bytes: number[] = []
  for (;;) {
    const byte = value & 0x7f
    value >>= 7
    const done = (value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)
    bytes.push(done ? byte : byte | 0x80)
    if (done) return bytes
  }
}

const section = (id: number, body: number[]) => [id, ...unsignedLeb(body.length), ...body]
const name = (text: string) => [text.length, ...Array.from(text, (char) => char.charCodeAt(0))]

// Parameters 0–4 (rows, count, dimension, query, out), then locals.
const [ROWS, COUNT, DIMENSION, QUERY, OUT] = [0, 1, 2, 3, 4]
const [ROW, CURSOR, QUERY_CURSOR, QUERY_END] = [5, 6, 7, 8]
const ACCUMULATORS = [9, 10, 11, 12]
const SUM = 13

/** Four accumulators, 32 values a step: independent dot products the CPU can overlap. */
function innerStep(): number[] {
  return ACCUMULATORS.flatMap((accumulator, index) => [
    ...op.get(accumulator),
    ...op.get(CURSOR),
    ...op.v128Load8x8s(index * 8),
    ...op.get(QUERY_CURSOR),
    ...op.v128Load(index * 16),
    ...op.i32x4DotI16x8,
    ...op.i32x4Add,
    ...op.set(accumulator),
  ])
}

function scanBody(): number[] {
  const lane = (index: number) => [...op.get(SUM), ...op.i32x4Lane(index)]
  const code = [
    ...[...op.get(ROWS), ...op.set(CURSOR), ...op.i32(0), ...op.set(ROW)],
    ...[...op.get(QUERY), ...op.get(DIMENSION), ...op.i32(1), ...op.i32Shl, ...op.i32Add, ...op.set(QUERY_END)],
    ...op.block,
    ...[...op.get(ROW), ...op.get(COUNT), ...op.i32GeU, ...op.brIf(0)],
    ...op.loop,
    ...ACCUMULATORS.flatMap((accumulator) => [...op.v128Zero, ...op.set(accumulator)]),
    ...[...op.get(QUERY), ...op.set(QUERY_CURSOR)],
    ...op.loop,
    ...innerStep(),
    ...[...op.get(CURSOR), ...op.i32(32), ...op.i32Add, ...op.set(CURSOR)],
    ...[...op.get(QUERY_CURSOR), ...op.i32(64), ...op.i32Add, ...op.tee(QUERY_CURSOR)],
    ...[...op.get(QUERY_END), ...op.i32LtU, ...op.brIf(0)],
    ...op.end,
    ...[...op.get(ACCUMULATORS[0]), ...op.get(ACCUMULATORS[1]), ...op.i32x4Add],
    ...[...op.get(ACCUMULATORS[2]), ...op.get(ACCUMULATORS[3]), ...op.i32x4Add, ...op.i32x4Add, ...op.set(SUM)],
    ...[...op.get(OUT), ...op.get(ROW), ...op.i32(2), ...op.i32Shl, ...op.i32Add],
    ...[...lane(0), ...lane(1), ...op.i32Add, ...lane(2), ...op.i32Add, ...lane(3), ...op.i32Add, ...op.f32FromI32],
    ...op.f32Store,
    ...[...op.get(ROW), ...op.i32(1), ...op.i32Add, ...op.tee(ROW), ...op.get(COUNT), ...op.i32LtU, ...op.brIf(0)],
    ...op.end,
    ...op.end,
    ...op.end,
  ]
  const locals = [2, 4, I32, 5, V128]
  const body = [...locals, ...code]
  return [...unsignedLeb(body.length), ...body]
}

function scanModuleBytes(): Uint8Array {
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]),
    ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 1]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('scan'), 0x00, 0]),
    ...section(10, [1, ...scanBody()]),
  ])
}

export type ScanFunction = (rows: number, count: number, dimension: number, query: number, out: number) => void

let compiled: WebAssembly.Module | null = null

/** The scan bound to `memory` (one instance per memory; the compiled module is shared). */
export function scanOver(memory: WebAssembly.Memory): ScanFunction {
  compiled ??= new WebAssembly.Module(scanModuleBytes())
  const instance = new WebAssembly.Instance(compiled, { env: { memory } })
  return instance.exports.scan as ScanFunction
}

/** Rows are padded with zeros to a multiple of this many values (the loop's step). */
export const SCAN_STEP = 32
