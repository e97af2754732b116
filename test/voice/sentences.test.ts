import { describe, expect, test } from 'bun:test'
import { createSentenceSplitter } from '../../src/voice/sentences.ts'

/** Feeds `text` in pieces of `size` characters (as tokens would arrive) and returns every sentence, flush included. */
function split(text: string, size = 3, maxChars?: number): string[] {
  const splitter = createSentenceSplitter({ maxChars })
  const sentences: string[] = []
  for (let at = 0; at < text.length; at += size) sentences.push(...splitter.push(text.slice(at, at + size)))
  const rest = splitter.flush()
  if (rest) sentences.push(rest)
  return sentences
}

describe('sentence splitter', () => {
  const cases: [string, string, string[]][] = [
    ['plain sentences', 'Hello there. How are you? Great!', ['Hello there.', 'How are you?', 'Great!']],
    [
      'titles are not ends',
      'Dr. Smith and Mrs. Jones will call. Bye.',
      ['Dr. Smith and Mrs. Jones will call.', 'Bye.'],
    ],
    ['decimals are not ends', 'The rate is 3.5 percent. Okay?', ['The rate is 3.5 percent.', 'Okay?']],
    [
      'e.g. and i.e. are not ends',
      'Bring an ID, e.g. a passport, i.e. something official. Thanks.',
      ['Bring an ID, e.g. a passport, i.e. something official.', 'Thanks.'],
    ],
    ['initials are not ends', 'Ask for J. R. Ewing please. Now.', ['Ask for J. R. Ewing please.', 'Now.']],
    [
      'closing quotes stay with their sentence',
      'She said "yes." Then she left.',
      ['She said "yes."', 'Then she left.'],
    ],
    ['ellipsis and repeated marks', 'Well... maybe?! Sure.', ['Well...', 'maybe?!', 'Sure.']],
    ['line breaks end a line of a list', 'Options:\n1) Pay now\n2) Later', ['Options:', '1) Pay now', '2) Later']],
    ['CJK full stop ends without a space', '你好。再见', ['你好。', '再见']],
    ['etc. at the end ends it', 'Apples, pears, etc. Anything else?', ['Apples, pears, etc.', 'Anything else?']],
    ['a dot at the very end waits for the flush', 'Call me at 5.', ['Call me at 5.']],
  ]
  for (const [name, text, expected] of cases) {
    test(name, () => {
      expect(split(text)).toEqual(expected)
      expect(split(text, 1)).toEqual(expected)
    })
  }

  test('a sentence is returned as soon as the space after its end arrives', () => {
    const splitter = createSentenceSplitter()
    expect(splitter.push('Hi there.')).toEqual([])
    expect(splitter.push(' And')).toEqual(['Hi there.'])
    expect(splitter.push(' then')).toEqual([])
    expect(splitter.flush()).toBe('And then')
    expect(splitter.flush()).toBeNull()
  })

  test('a run-on sentence is cut at a clause break once it passes maxChars', () => {
    const sentences = split(
      'We can offer the basic plan, the family plan with three lines and the business plan with support',
      5,
      40,
    )
    expect(sentences[0]).toBe('We can offer the basic plan,')
    expect(sentences.join(' ')).toBe(
      'We can offer the basic plan, the family plan with three lines and the business plan with support',
    )
    for (const sentence of sentences) expect(sentence.length).toBeLessThanOrEqual(40 + 5)
  })

  test('whitespace only yields nothing', () => {
    expect(split('  \n \n ')).toEqual([])
  })
})
