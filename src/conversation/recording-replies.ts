/**
 * Replies that may be a recording (the reference's "RECORDING_ID:" mode). A node whose prompt names clips as
 * `RECORDING_ID: <id> [what it says]` gets PROMPT_BLOCK: every reply then starts with one marker, `▸` and the text to
 * speak, or `●` and the id of the clip to play. Better than the reference: only such nodes are routed (others stream
 * as usual, with no buffering), and only a marker at the very start of the reply counts.
 */

export const SPEAK_MARKER = '▸'
export const PLAY_MARKER = '●'

export const PROMPT_BLOCK = [
  'Some replies can be played as recordings: the prompt names them as `RECORDING_ID: <id> [what it says]`.',
  `Start every reply with exactly one marker. To speak, write ${SPEAK_MARKER} and a space, then the text.`,
  `To play a recording, write ${PLAY_MARKER} and a space, then only its id.`,
  'Prefer a recording when one says what you need to say; otherwise speak. Never mix the two in one reply.',
].join('\n')

/** What the router makes of a reply, as it streams. */
export type RoutedPiece = { kind: 'text'; text: string } | { kind: 'recording'; recordingId: string }

export type ReplyRouter = {
  /** The next streamed text; returns what can be acted on now. */
  push(text: string): RoutedPiece[]
  /** The reply is complete. */
  end(): RoutedPiece[]
}

type Mode = 'undecided' | 'speak' | 'play' | 'plain' | 'done'

export function createReplyRouter(): ReplyRouter {
  let mode: Mode = 'undecided'
  let buffer = ''
  /** The space after `▸` may come in a later piece than the marker. */
  let dropSpace = false

  const playNow = (): RoutedPiece[] => {
    const id =
      buffer
        .trim()
        .split(/\s+/)[0]
        ?.replace(/[^A-Za-z0-9_-].*$/, '') ?? ''
    mode = 'done'
    return id === '' ? [] : [{ kind: 'recording', recordingId: id }]
  }

  const route = (): RoutedPiece[] => {
    if (mode === 'undecided') {
      const start = buffer.trimStart()
      if (start === '') return []
      if (start.startsWith(PLAY_MARKER)) {
        mode = 'play'
        buffer = start.slice(PLAY_MARKER.length)
      } else if (start.startsWith(SPEAK_MARKER)) {
        mode = 'speak'
        buffer = start.slice(SPEAK_MARKER.length)
        dropSpace = true
      } else {
        mode = 'plain'
      }
    }
    if (mode === 'play') return /\S\s/.test(buffer) ? playNow() : []
    if (mode === 'speak' || mode === 'plain') {
      if (dropSpace && buffer !== '') {
        buffer = buffer.replace(/^ /, '')
        dropSpace = false
      }
      // A `●` after spoken text: what comes after it is not said (the model mixed the two).
      const cut = mode === 'speak' ? buffer.indexOf(PLAY_MARKER) : -1
      const text = cut >= 0 ? buffer.slice(0, cut) : buffer
      if (cut >= 0) mode = 'done'
      buffer = ''
      return text === '' ? [] : [{ kind: 'text', text }]
    }
    return []
  }

  return {
    push(text) {
      if (mode === 'done') return []
      buffer += text
      return route()
    },
    end() {
      if (mode === 'play') return playNow()
      const pieces = mode === 'undecided' && buffer.trim() !== '' ? route() : []
      mode = 'done'
      return pieces
    },
  }
}

/** Whether a node's rendered prompt offers recordings. */
export const offersRecordings = (prompt: string) => prompt.includes('RECORDING_ID:')
