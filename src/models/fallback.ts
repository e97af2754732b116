import type { LlmClient, LlmEvent, ModelRef } from './types'
import { within } from '../lib/within'

/** The run's `llm_fallback` rule `{condition:{type:"no_output", after_ms}, target}` with its target already a client. */
export type LlmFallbackRule = { noOutputAfterMs: number; target: LlmClient }

/**
 * A switch from one model to the next. `no_output`: nothing came within `afterMs`. `error`: the model failed before
 * its first token, so waiting out `afterMs` would only delay the same switch. From the switch on, `to` is the model
 * whose tokens the answer (and its usage) belongs to.
 */
export type LlmSwitch = { from: ModelRef; to: ModelRef; reason: 'no_output' | 'error'; afterMs: number; error?: string }

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown } | null

/** How `promise` settled within `ms`, or null when it had not. */
const settledWithin = <T>(promise: Promise<T>, ms: number): Promise<Settled<T>> =>
  within(
    promise.then(
      (value) => ({ ok: true as const, value }),
      (error) => ({ ok: false as const, error }),
    ),
    ms,
    () => null,
  )

/**
 * An LlmClient that tries `primary`, then each rule's target in turn: rule i watches the model before its target
 * (the primary for the first rule) and, when that model has produced no token after `noOutputAfterMs`, aborts its
 * request and asks the target instead. Once a model has produced output, the answer stays with it. `onSwitch` hears
 * every switch, so the run can log it and count usage against the model that answered. Aborts by the caller are
 * not switches: they end the answer.
 */
export function withLlmFallback(
  primary: LlmClient,
  rules: LlmFallbackRule[],
  onSwitch: (change: LlmSwitch) => void,
): LlmClient {
  const chain = [primary, ...rules.map((rule) => rule.target)]

  /** Settles a lost attempt: aborts it, and tells of the switch unless the caller aborted. */
  function switchAway(step: number, settled: Settled<unknown>, attempt: AbortController, callerSignal?: AbortSignal) {
    attempt.abort()
    if (settled && !settled.ok && callerSignal?.aborted) throw settled.error
    const rule = rules[step]
    onSwitch({
      from: chain[step].ref,
      to: chain[step + 1].ref,
      afterMs: rule.noOutputAfterMs,
      ...(settled && !settled.ok
        ? {
            reason: 'error' as const,
            error: settled.error instanceof Error ? settled.error.message : String(settled.error),
          }
        : { reason: 'no_output' as const }),
    })
  }

  const attemptSignal = (attempt: AbortController, callerSignal?: AbortSignal) =>
    callerSignal ? AbortSignal.any([callerSignal, attempt.signal]) : attempt.signal

  async function* stream(request: Parameters<LlmClient['stream']>[0]): AsyncGenerator<LlmEvent> {
    for (let step = 0; step < rules.length; step++) {
      const attempt = new AbortController()
      const events = chain[step]
        .stream({ ...request, signal: attemptSignal(attempt, request.signal) })
        [Symbol.asyncIterator]()
      const first = events.next()
      const settled = await settledWithin(first, rules[step].noOutputAfterMs)
      if (settled?.ok) {
        if (settled.value.done) return
        yield settled.value.value
        try {
          for (let next = await events.next(); !next.done; next = await events.next()) yield next.value
        } finally {
          await events.return?.()
        }
        return
      }
      first.catch(() => {})
      switchAway(step, settled, attempt, request.signal)
    }
    yield* chain[rules.length].stream(request)
  }

  async function completeJson(request: Parameters<LlmClient['completeJson']>[0]) {
    for (let step = 0; step < rules.length; step++) {
      const attempt = new AbortController()
      const answer = chain[step].completeJson({ ...request, signal: attemptSignal(attempt, request.signal) })
      const settled = await settledWithin(answer, rules[step].noOutputAfterMs)
      if (settled?.ok) return settled.value
      answer.catch(() => {})
      switchAway(step, settled, attempt, request.signal)
    }
    return chain[rules.length].completeJson(request)
  }

  return { ref: primary.ref, stream, completeJson }
}
