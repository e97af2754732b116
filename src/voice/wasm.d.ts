// `import path from 'x.wasm' with { type: 'file' }`: Bun embeds the file in the compiled binary and gives its path.
declare module '*.wasm' {
  const path: string
  export default path
}

declare module '@echogarden/fvad-wasm' {
  type FvadModule = {
    _fvad_new(): number
    _fvad_free(handle: number): void
    _fvad_set_mode(handle: number, mode: number): number
    _fvad_set_sample_rate(handle: number, rate: number): number
    _fvad_process(handle: number, frame: number, length: number): number
    _malloc(bytes: number): number
    _free(pointer: number): void
    HEAP16: Int16Array
  }
  const createFvadModule: (options: { wasmBinary: Uint8Array }) => Promise<FvadModule>
  export default createFvadModule
}

declare module '@echogarden/rnnoise-wasm' {
  type RnnoiseModule = {
    _rnnoise_create(model: number): number
    _rnnoise_destroy(state: number): void
    _rnnoise_process_frame(state: number, out: number, input: number): number
    _malloc(bytes: number): number
    _free(pointer: number): void
    HEAPF32: Float32Array
  }
  const createRnnoiseModule: (options: { wasmBinary: Uint8Array }) => Promise<RnnoiseModule>
  export default createRnnoiseModule
}
