/**
 * Cuts streamed LLM text into sentences as the tokens arrive, so each sentence can go to TTS while the rest is still
 * being generated. A boundary is `.`, `!`, `?` or `…` (closing quotes and brackets included) followed by whitespace,
 * a line break, or a CJK full stop. It is not a boundary after a known abbreviation ("Dr.", "e.g."), a single
 * capital initial ("J. Smith"), or inside a number ("3.5" never has the space). A sentence running past `maxChars`
 * is cut at its last clause break (`,;:` or a dash), else its last space, so speech starts without waiting too long.
 */

export type SentenceSplitter = {
  /** Adds streamed text; returns the sentences it completed (trimmed, never empty). */
  push(text: string): string[]
  /** The end of the stream: returns what is left (trimmed), or null when nothing is. */
  flush(): string | null
}

/** Words whose dot never ends a sentence. Not "etc.": it usually comes last. */
const ABBREVIATIONS = new Set([
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'sr',
  'jr',
  'st',
  'mt',
  'ft',
  'vs',
  'approx',
  'dept',
  'est',
  'inc',
  'ltd',
  'co',
  'corp',
  'no',
  'tel',
  'ext',
  'jan',
  'feb',
  'mar',
  'apr',
  'jun',
  'jul',
  'aug',
  'sep',
  'sept',
  'oct',
  'nov',
  'dec',
  'mon',
  'tue',
  'wed',
  'thu',
  'fri',
  'sat',
  'sun',
  'e.g',
  'i.e',
  'a.m',
  'p.m',
  'u.s',
  'u.k',
])

const TERMINATORS = '.!?…'
const CLOSERS = `"')]}»”’`
const CJK_TERMINATORS = '。！？'

function isSpace(char: string): boolean {
  return char === ' ' || char === '\n' || char === '\t' || char === '\r'
}

/** Whether the `.` at `dot` ends the word of an abbreviation or an initial (so it is not a sentence end). */
function isAbbreviationDot(text: string, dot: number): boolean {
  let wordStart = dot
  while (wordStart > 0 && !isSpace(text[wordStart - 1]) && !'("\'['.includes(text[wordStart - 1])) wordStart--
  const word = text.slice(wordStart, dot).toLowerCase()
  if (word.length === 0) return false
  if (/^[a-z]$/i.test(word) && text[wordStart] !== text[wordStart].toLowerCase()) return true
  return ABBREVIATIONS.has(word)
}

export function createSentenceSplitter(options: { maxChars?: number } = {}): SentenceSplitter {
  const maxChars = options.maxChars ?? 250
  let buffer = ''
  let scanned = 0

  function take(end: number, out: string[]): void {
    const sentence = buffer.slice(0, end).trim()
    buffer = buffer.slice(end)
    scanned = 0
    if (sentence !== '') out.push(sentence)
  }

  /** The index just past a sentence boundary found at or after `scanned`, or -1 (also when more text is needed to decide). */
  function findBoundary(): number {
    for (let i = scanned; i < buffer.length; i++) {
      const char = buffer[i]
      if (CJK_TERMINATORS.includes(char)) return i + 1
      if (char === '\n' && buffer.slice(0, i).trim() !== '') return i + 1
      if (!TERMINATORS.includes(char)) continue
      let end = i + 1
      while (end < buffer.length && (TERMINATORS.includes(buffer[end]) || CLOSERS.includes(buffer[end]))) end++
      if (end >= buffer.length) {
        scanned = i
        return -1
      }
      if (!isSpace(buffer[end])) {
        i = end - 1
        continue
      }
      if (char === '.' && end === i + 1 && isAbbreviationDot(buffer, i)) continue
      return end
    }
    scanned = buffer.length
    return -1
  }

  function cutLongSentence(out: string[]): void {
    const head = buffer.slice(0, maxChars)
    const clause = Math.max(
      head.lastIndexOf(', '),
      head.lastIndexOf('; '),
      head.lastIndexOf(': '),
      head.lastIndexOf(' - '),
      head.lastIndexOf(' — '),
    )
    const cut = clause > 0 ? clause + 1 : head.lastIndexOf(' ')
    if (cut > 0) take(cut + 1, out)
  }

  return {
    push(text) {
      buffer += text
      const sentences: string[] = []
      for (let end = findBoundary(); end !== -1; end = findBoundary()) take(end, sentences)
      if (buffer.length > maxChars) cutLongSentence(sentences)
      return sentences
    },
    flush() {
      const rest = buffer.trim()
      buffer = ''
      scanned = 0
      return rest === '' ? null : rest
    },
  }
}
