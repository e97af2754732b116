import type { TextBlock } from './extract-text'

/**
 * Text into chunks for embedding. The reference cuts 128-token windows with no overlap, which splits sentences and
 * loses an answer that straddles a cut. Here chunks end at sentence boundaries, aim at ~200 tokens (never over 320),
 * repeat the previous chunk's last sentence (when short) so a straddling answer is whole in one of them, never span
 * two Markdown sections, and carry their heading path in `contextualized_text` (what is embedded and shown to the
 * model), like the reference's heading context. Tokens are estimated at 4 characters each: no tokenizer in the binary.
 */

export type Chunk = {
  chunk_index: number
  chunk_text: string
  contextualized_text: string
  chunk_metadata: { page?: number; page_end?: number; headings?: string[] }
  token_count: number
}

export const CHUNKING = { targetTokens: 200, maxTokens: 320, overlapMaxTokens: 60 }

export const estimateTokens = (text: string): number => Math.ceil(text.length / 4)

type Sentence = { text: string; page?: number; headings: string[] }

const HEADING = /^(#{1,6})\s+(.+?)\s*#*\s*$/

/** A sentence longer than a chunk is cut at word boundaries into pieces that fit. */
function pieces(sentence: string): string[] {
  const maxChars = CHUNKING.maxTokens * 4
  if (sentence.length <= maxChars) return [sentence]
  const parts: string[] = []
  let current = ''
  for (const word of sentence.split(/\s+/)) {
    for (let start = 0; start < word.length; start += maxChars) {
      const piece = word.slice(start, start + maxChars)
      if (current && current.length + 1 + piece.length > maxChars) {
        parts.push(current)
        current = piece
      } else current = current ? `${current} ${piece}` : piece
    }
  }
  if (current) parts.push(current)
  return parts
}

function sentencesOf(blocks: TextBlock[], markdown: boolean): Sentence[] {
  const sentences: Sentence[] = []
  let headings: string[] = []
  for (const block of blocks) {
    for (const paragraph of block.text.split(/\n\s*\n/)) {
      const lines = paragraph.split('\n')
      const body: string[] = []
      for (const line of lines) {
        const heading = markdown ? HEADING.exec(line.trim()) : null
        if (heading) {
          headings = [...headings.slice(0, heading[1].length - 1), heading[2]]
        } else body.push(line)
      }
      const text = body.join(' ').replace(/\s+/g, ' ').trim()
      if (!text) continue
      for (const sentence of text.split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}"'(\[])/u)) {
        for (const piece of pieces(sentence)) sentences.push({ text: piece, page: block.page, headings })
      }
    }
  }
  return sentences
}

export function chunkText(blocks: TextBlock[], { markdown }: { markdown: boolean }): Chunk[] {
  const chunks: Chunk[] = []
  let current: Sentence[] = []
  let tokens = 0
  const emit = () => {
    if (current.length === 0) return
    const text = current.map(({ text }) => text).join(' ')
    const { headings } = current[0]
    const pages = current.flatMap(({ page }) => (page === undefined ? [] : [page]))
    const contextualized = headings.length > 0 ? `${headings.join(' > ')}\n${text}` : text
    chunks.push({
      chunk_index: chunks.length,
      chunk_text: text,
      contextualized_text: contextualized,
      chunk_metadata: {
        ...(pages.length > 0
          ? { page: pages[0], ...(pages.at(-1)! !== pages[0] ? { page_end: pages.at(-1)! } : {}) }
          : {}),
        ...(headings.length > 0 ? { headings } : {}),
      },
      token_count: estimateTokens(contextualized),
    })
  }
  for (const sentence of sentencesOf(blocks, markdown)) {
    const size = estimateTokens(sentence.text)
    const newSection = current.length > 0 && current[0].headings !== sentence.headings
    if (current.length > 0 && (newSection || tokens + size > CHUNKING.targetTokens)) {
      emit()
      const last = current.at(-1)!
      const overlap =
        !newSection &&
        estimateTokens(last.text) <= CHUNKING.overlapMaxTokens &&
        estimateTokens(last.text) + size <= CHUNKING.maxTokens
      current = overlap ? [last] : []
      tokens = overlap ? estimateTokens(last.text) : 0
    }
    current.push(sentence)
    tokens += size
  }
  emit()
  return chunks
}
