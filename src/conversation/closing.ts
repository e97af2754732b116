/**
 * How a conversation ends: a tool's closing (end_call waits for its goodbye to be heard, a transfer does not), the
 * pending reply stopped, and `finish`: the last extraction (bounded), the disposition and tags settled, the `ended`
 * event. `finish` runs once; later calls get the same promise.
 */
import { dispositionFields, type EndReason } from './record'
import { startExtraction } from './nodes'
import type { ToolEffect } from './tool-calls'
import { warn, type EngineState } from './engine-state'

const FINAL_EXTRACTION_WAIT_MS = 30_000
const NO_FINAL_EXTRACTION = new Set<EndReason>(['pipeline_error', 'voicemail_detected'])
const IMMEDIATE_ENDS = new Set<EndReason>([
  'call_duration_exceeded',
  'user_hangup',
  'call_transferred',
  'voicemail_detected',
  'pipeline_error',
  'model_error',
])

/** What a tool said before its effect: an agent turn (its index) or a recorded clip. */
export type ToolSpeech = { turn: number | null }

export function beginClosing(s: EngineState, effect: Exclude<ToolEffect, { kind: 'none' }>, said: ToolSpeech): void {
  if (effect.kind === 'transferred') {
    s.gathered.transfer_destination = effect.destination
    s.closing = {
      reason: 'call_transferred',
      disposition: null,
      awaitHeard: false,
      afterTurn: null,
      since: s.clock.now(),
    }
    return
  }
  const unheard = said.turn !== null && said.turn > s.heardUpTo
  s.closing = {
    reason: 'end_call_tool',
    disposition: effect.disposition,
    awaitHeard: s.awaitSpeechEnd && unheard,
    afterTurn: said.turn,
    since: s.clock.now(),
  }
}

/** `disposition`: the end_call tool's reason, which wins over an extracted one. */
export function finish(s: EngineState, reason: EndReason, disposition: string | null = null): Promise<void> {
  s.finishing ??= (async () => {
    s.endReason = reason
    if (!NO_FINAL_EXTRACTION.has(reason)) startExtraction(s, s.node)
    const stopWaiting = new AbortController()
    await Promise.race([
      Promise.all([...s.pendingExtractions].map(({ promise }) => promise)),
      s.sleep(FINAL_EXTRACTION_WAIT_MS, stopWaiting.signal),
    ])
    stopWaiting.abort()
    if (s.pendingExtractions.size > 0) warn(s, 'Variable extraction did not finish before the call ended')
    const gathered = disposition ? { ...s.gathered, call_disposition: disposition } : s.gathered
    const fields = dispositionFields(
      gathered,
      reason,
      s.transcript.some(({ role }) => role === 'user'),
    )
    if (disposition && !fields.call_tags.includes(reason)) fields.call_tags.push(reason)
    Object.assign(s.gathered, fields)
    s.startedAt ??= s.clock.now()
    s.endedAt = s.clock.now()
    s.phase = 'completed'
    s.onEvent({ type: 'ended', reason, graceful: !IMMEDIATE_ENDS.has(reason) })
  })()
  return s.finishing
}

/** Ends the way a tool's closing said. */
export const finishClosing = (s: EngineState) => finish(s, s.closing!.reason, s.closing!.disposition)

/** Aborts the reply being produced (keeping `heardText` as its turn's text) and waits for it to wind down. */
export async function stopPendingReply(s: EngineState, heardText?: string): Promise<void> {
  const current = s.pending
  if (!current) return
  if (current.open && heardText !== undefined) current.open.heardText = heardText
  current.controller.abort()
  await current.done
}
