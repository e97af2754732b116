// `import path from 'x.wasm' with { type: 'file' }`: Bun embeds the file in the compiled binary and gives its path.
declare module '*.wasm' {
  const path: string
  export default path
}

/** What every Emscripten module we load has: its heap allocator, instantiated from the WASM bytes we read. */
type EmscriptenHeap = { _malloc(bytes: number): number; _free(pointer: number): void }
type EmscriptenFactory<Module> = (options: { wasmBinary: Uint8Array }) => Promise<Module & EmscriptenHeap>

declare module '@echogarden/fvad-wasm' {
  const createFvadModule: EmscriptenFactory<{
    _fvad_new(): number
    _fvad_free(handle: number): void
    _fvad_set_mode(handle: number, mode: number): number
    _fvad_set_sample_rate(handle: number, rate: number): number
    _fvad_process(handle: number, frame: number, length: number): number
    HEAP16: Int16Array
  }>
  export default createFvadModule
}

declare module '@echogarden/rnnoise-wasm' {
  const createRnnoiseModule: EmscriptenFactory<{
    _rnnoise_create(model: number): number
    _rnnoise_destroy(state: number): void
    _rnnoise_process_frame(state: number, out: number, input: number): number
    HEAPF32: Float32Array
  }>
  export default createRnnoiseModule
}
