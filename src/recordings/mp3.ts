/**
 * MP3 (MPEG-1/2/2.5 Layer III) decoding for recording uploads: minimp3 (CC0) compiled to WebAssembly without
 * Emscripten by the `minimp3-wasm` package (Apache-2.0). The WASM file is imported as a file asset, so
 * `bun build --compile` embeds it. A fresh instance per file: its memory (the file and the decoded audio) is dropped
 * with it, and a hostile file can at worst trap inside its own sandbox.
 */
import minimp3WasmPath from 'minimp3-wasm/dist/decoder.opt.wasm' with { type: 'file' }
import { joinPcm } from '../lib/wav'
import { nextTurn } from '../lib/next-turn'

type Minimp3 = {
  memory: WebAssembly.Memory
  decoder_init(): void
  decoder_set_mp3_data_size(bytes: number): void
  decoder_mp3_data_offset(): number
  decoder_mp3_data_size(): number
  decoder_seek(seconds: number): void
  decoder_current_time(): number
  decoder_decode(seconds: number): void
  decoder_pcm_data_offset(): number
  decoder_pcm_data_size(): number
  decode_results_sampling_rate(): number
  decode_results_num_channels(): number
}

/** An MP3 this code cannot read; the message is safe to show. */
export class Mp3Error extends Error {}

export type Mp3Audio = { mono: Int16Array; sampleRate: number; channels: number }

/** Seconds decoded between two turns of the event loop. */
const STEP_SECONDS = 10

let compiled: Promise<WebAssembly.Module> | null = null
const minimp3Module = () => {
  compiled ??= Bun.file(minimp3WasmPath)
    .arrayBuffer()
    .then((bytes) => WebAssembly.compile(bytes))
  return compiled
}

/** An ID3v2 tag, or an MPEG audio frame's sync word, at the start. */
export const startsLikeMp3 = (bytes: Uint8Array) =>
  (bytes.length >= 3 && bytes[0] === 0x49 && bytes[1] === 0x44 && bytes[2] === 0x33) ||
  (bytes.length >= 2 && bytes[0] === 0xff && (bytes[1] & 0xe0) === 0xe0)

/**
 * The file's audio mixed down to mono at its own rate. Its length is read first (a scan of the frame headers), so a
 * file longer than `maxSeconds` is refused before any decoding.
 */
export async function decodeMp3(bytes: Uint8Array, maxSeconds: number): Promise<Mp3Audio> {
  const instance = await WebAssembly.instantiate(await minimp3Module(), {})
  const decoder = instance.exports as unknown as Minimp3
  decoder.decoder_init()
  decoder.decoder_set_mp3_data_size(bytes.length)
  new Uint8Array(decoder.memory.buffer, decoder.decoder_mp3_data_offset(), decoder.decoder_mp3_data_size()).set(bytes)
  decoder.decoder_seek(-1)
  const seconds = decoder.decoder_current_time()
  if (!(seconds > 0)) throw new Mp3Error('Not an MP3 file, or one holding no audio')
  if (seconds > maxSeconds) throw new Mp3Error(`The recording is longer than ${maxSeconds} seconds`)
  decoder.decoder_seek(0)
  const pieces: Int16Array[] = []
  let sampleRate = 0
  let channels = 0
  for (let at = 0; at < seconds; at += STEP_SECONDS) {
    decoder.decoder_decode(STEP_SECONDS)
    const samples = decoder.decoder_pcm_data_size() / 2
    if (samples === 0) break
    sampleRate ||= decoder.decode_results_sampling_rate()
    channels ||= decoder.decode_results_num_channels()
    const interleaved = new Int16Array(decoder.memory.buffer, decoder.decoder_pcm_data_offset(), samples)
    pieces.push(mixDown(interleaved, channels))
    await nextTurn()
  }
  const mono = joinPcm(pieces)
  if (mono.length === 0 || sampleRate === 0) throw new Mp3Error('Not an MP3 file, or one holding no audio')
  return { mono, sampleRate, channels }
}

/** Interleaved channels averaged into one track (always a fresh array: the input may be WASM memory). */
export function mixDown(interleaved: Int16Array, channels: number): Int16Array {
  if (channels === 1) return interleaved.slice()
  const mono = new Int16Array(Math.floor(interleaved.length / channels))
  for (let frame = 0, at = 0; frame < mono.length; frame++) {
    let sum = 0
    for (let channel = 0; channel < channels; channel++) sum += interleaved[at++]
    mono[frame] = Math.round(sum / channels)
  }
  return mono
}
