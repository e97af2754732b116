/**
 * DTMF keys → a caller turn ("DTMF: 12#"): digits are collected until `#` or `timeoutMs` without a key. The first key
 * takes the floor like speech does (the agent is cut when it may be).
 */
import type { Stage, StageContext } from '../stage'

export function collectDigits(timeoutMs: number): Stage {
  let context: StageContext
  let digits = ''
  let timer: ReturnType<typeof setTimeout> | undefined

  function send(): void {
    clearTimeout(timer)
    timer = undefined
    const collected = digits
    digits = ''
    if (!collected || context.ending()) return
    void context.push({
      kind: 'caller_turn',
      turn: { text: `DTMF: ${collected}`, timing: {}, metric: null, source: 'dtmf' },
    })
  }

  return {
    name: 'dtmf',
    start(given) {
      context = given
    },
    process(frame) {
      if (frame.kind !== 'dtmf') return context.push(frame)
      if (!digits) context.yieldToCaller()
      digits += frame.digit
      clearTimeout(timer)
      if (frame.digit === '#') send()
      else timer = setTimeout(send, timeoutMs)
    },
    stop() {
      clearTimeout(timer)
    },
  }
}
