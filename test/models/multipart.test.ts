import { describe, expect, test } from 'bun:test'
import { multipartBody } from '../../src/models/multipart'

describe('multipart bodies', () => {
  test('a standard parser reads back every part: fields (line breaks and quotes kept) and a file, bytes exact', async () => {
    const audio = Uint8Array.from({ length: 70_000 }, (_, index) => (index * 7) % 256)
    const form = multipartBody([
      { name: 'file', filename: 'speech.wav', contentType: 'audio/wav', bytes: audio },
      { name: 'model', value: 'org/"odd"\r\nmodel' },
      { name: 'response_format', value: 'json' },
    ])
    const parsed = await new Response(form.laidOut().slice(), {
      headers: { 'content-type': form.contentType },
    }).formData()
    const file = parsed.get('file') as File
    expect(file.name).toBe('speech.wav')
    // (Bun's parser reports it as audio/x-wav, from the file name)
    expect(new TextDecoder().decode(form.laidOut().slice().subarray(0, 200))).toContain(
      'Content-Type: audio/wav\r\n\r\n',
    )
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(audio)
    expect(parsed.get('model')).toBe('org/"odd"\r\nmodel')
    expect(parsed.get('response_format')).toBe('json')
  })

  test('a header parameter cannot break out of its line', async () => {
    const form = multipartBody([{ name: 'x"\r\nContent-Type: text/evil', value: 'v' }])
    const text = new TextDecoder().decode(form.laidOut().slice())
    expect(text).not.toContain('\r\nContent-Type: text/evil')
    const parsed = await new Response(form.laidOut().slice(), {
      headers: { 'content-type': form.contentType },
    }).formData()
    expect([...parsed.keys()]).toHaveLength(1)
  })
})
