import { describe, expect, test } from 'bun:test'
import { readSseData } from '../../src/models/sse'
import { ModelServerError } from '../../src/models/types'

/** `text` as a stream cut at the given byte offsets. */
function streamOf(bytes: Uint8Array, cuts: number[]): ReadableStream<Uint8Array> {
  const bounds = [0, ...cuts, bytes.length]
  return new ReadableStream({
    start(controller) {
      for (let index = 1; index < bounds.length; index++)
        controller.enqueue(bytes.slice(bounds[index - 1], bounds[index]))
      controller.close()
    },
  })
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<string[]> {
  const events: string[] = []
  for await (const batch of readSseData(stream, { what: 'test' })) events.push(...batch)
  return events
}

describe('readSseData', () => {
  const wire =
    ': keep-alive comment\r\n' +
    'data: {"text":"héllo €"}\r\n\r\n' +
    'event: ignored\ndata:{"n":2}\n\n' +
    'data: first line\ndata: second line\n\n' +
    'id: 7\rdata: cr only\r\r' +
    'data: [DONE]\n\n'
  const expected = ['{"text":"héllo €"}', '{"n":2}', 'first line\nsecond line', 'cr only', '[DONE]']

  test('yields the same events whatever byte the network cuts at', async () => {
    const bytes = new TextEncoder().encode(wire)
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(await collect(streamOf(bytes, [cut]))).toEqual(expected)
    }
    expect(
      await collect(
        streamOf(
          bytes,
          Array.from({ length: bytes.length - 1 }, (_, index) => index + 1),
        ),
      ),
    ).toEqual(expected)
  })

  test('a last event without its blank line still counts', async () => {
    expect(await collect(streamOf(new TextEncoder().encode('data: a\n\ndata: b'), []))).toEqual(['a', 'b'])
  })

  test('a line that never ends fails once it passes the cap, after reading only that much', async () => {
    let pulled = 0
    async function* endless() {
      yield new TextEncoder().encode('data: {"x":"')
      for (;;) {
        pulled++
        yield new Uint8Array(1024).fill(0x61)
      }
    }
    const reading = (async () => {
      for await (const _ of readSseData(endless(), { what: 'chat completion', maxLineChars: 64 * 1024 })) {
        /* nothing comes */
      }
    })()
    const error = await reading.then(
      () => null,
      (caught) => caught,
    )
    expect(error).toBeInstanceOf(ModelServerError)
    expect(error.message).toBe('chat completion failed: the server sent a line longer than 65536 characters')
    expect(pulled).toBe(64)
  })

  test('lines split across many pieces come out whole, each LF, CRLF or CR ending one', async () => {
    const wire = `data: ${'b'.repeat(5000)}\r\n\r\ndata: c\r\rdata: d\n\n`
    const bytes = new TextEncoder().encode(wire)
    const cuts = Array.from({ length: Math.floor(bytes.length / 7) }, (_, index) => (index + 1) * 7)
    expect(await collect(streamOf(bytes, cuts))).toEqual(['b'.repeat(5000), 'c', 'd'])
  })
})
