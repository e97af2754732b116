/**
 * Whether a transcript reads as a finished turn, from its words alone (the text end-of-turn rule of speculative
 * turn-taking, docs/voice.md). Pure. A turn is finished when:
 * - it ends with terminal punctuation (`.`, `!`, `?`), not an ellipsis (`...`, `…`: a trailing off), or it is an
 *   unpunctuated question form (it opens with a question word or an auxiliary: "what time is it", "can you help");
 * - and its last word is not one that announces more: a conjunction ("and", "but", "so", "because"…), a preposition
 *   or article ("to", "for", "the"…), or a filler ("um", "uh", "like", "well"…).
 * Anything else (no punctuation, a trailing "and", "I would like to book, um…") waits for the full stop window.
 */

const CONTINUING_WORDS = new Set([
  // conjunctions
  'and',
  'or',
  'but',
  'so',
  'because',
  'cause',
  'then',
  'if',
  'when',
  'while',
  'although',
  'though',
  'unless',
  'until',
  'that',
  'which',
  'who',
  // prepositions and articles
  'to',
  'for',
  'of',
  'with',
  'at',
  'in',
  'on',
  'from',
  'about',
  'the',
  'a',
  'an',
  'my',
  'your',
  // fillers
  'um',
  'umm',
  'uh',
  'uhm',
  'er',
  'erm',
  'hmm',
  'ah',
  'like',
  'well',
])

const QUESTION_OPENERS = new Set([
  'what',
  'when',
  'where',
  'who',
  'whom',
  'whose',
  'why',
  'how',
  'which',
  'can',
  'could',
  'would',
  'will',
  'shall',
  'should',
  'may',
  'might',
  'do',
  'does',
  'did',
  'is',
  'are',
  'was',
  'were',
  'have',
  'has',
])

const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []

export function readsAsFinishedTurn(transcript: string): boolean {
  const text = transcript.trim().replace(/["'”’)\]]+$/u, '')
  const said = words(text)
  const last = said.at(-1)
  if (!last || CONTINUING_WORDS.has(last)) return false
  if (/(\.\.\.|…)$/u.test(text)) return false
  if (/[.!?]$/u.test(text)) return true
  return said.length >= 2 && QUESTION_OPENERS.has(said[0] ?? '')
}
