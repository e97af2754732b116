// The web call's audio in the browser's audio thread, loaded by web-call.ts from its own hashed asset (the console's
// Content-Security-Policy allows scripts of its origin only). Plain JavaScript: the file is served as it is.

/** 20 ms at the context's rate: how much microphone audio goes out in one frame. */
const FRAME_MS = 20

/** Microphone → 16-bit PCM frames of FRAME_MS (posted as transferable buffers) and their level (RMS, 0..1). */
class CaptureProcessor extends AudioWorkletProcessor {
  constructor() {
    super()
    this.frameLength = Math.round((sampleRate * FRAME_MS) / 1000)
    this.frame = new Int16Array(this.frameLength)
    this.filled = 0
    this.energy = 0
  }

  process(inputs) {
    const channel = inputs[0]?.[0]
    if (!channel) return true
    for (let index = 0; index < channel.length; index++) {
      const sample = Math.max(-1, Math.min(1, channel[index]))
      this.energy += sample * sample
      this.frame[this.filled++] = sample < 0 ? sample * 0x8000 : sample * 0x7fff
      if (this.filled === this.frameLength) {
        const level = Math.sqrt(this.energy / this.frameLength)
        // Transferred: the buffer is the main thread's now (and this array empty), so each frame gets a new one.
        this.port.postMessage({ pcm: this.frame.buffer, level }, [this.frame.buffer])
        this.frame = new Int16Array(this.frameLength)
        this.filled = 0
        this.energy = 0
      }
    }
    return true
  }
}

/**
 * Agent audio queued in order with the server's marks: a mark is reported played once every sample before it has been
 * output; `clear` (a barge-in) drops everything queued. Reports the samples played now and then.
 */
class PlaybackProcessor extends AudioWorkletProcessor {
  constructor() {
    super()
    this.queue = []
    this.offset = 0
    this.played = 0
    this.reported = 0
    this.port.onmessage = ({ data }) => {
      if (data.type === 'clear') {
        this.queue = []
        this.offset = 0
      } else this.queue.push(data)
    }
  }

  process(_inputs, outputs) {
    const output = outputs[0][0]
    let written = 0
    while (written < output.length && this.queue.length > 0) {
      const head = this.queue[0]
      if (head.type === 'mark') {
        this.port.postMessage({ type: 'played', mark: head.mark })
        this.queue.shift()
        continue
      }
      const count = Math.min(output.length - written, head.samples.length - this.offset)
      output.set(head.samples.subarray(this.offset, this.offset + count), written)
      written += count
      this.offset += count
      if (this.offset === head.samples.length) {
        this.queue.shift()
        this.offset = 0
      }
    }
    output.fill(0, written)
    this.played += written
    if (this.played - this.reported >= sampleRate / 10 || (written > 0 && this.queue.length === 0)) {
      this.reported = this.played
      this.port.postMessage({ type: 'progress', played: this.played })
    }
    return true
  }
}

registerProcessor('ringbase-capture', CaptureProcessor)
registerProcessor('ringbase-playback', PlaybackProcessor)
