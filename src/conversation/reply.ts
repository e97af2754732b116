/**
 * The agent's reply: LLM completions under the current node until the model stops calling functions. Its text streams
 * into a new agent turn; each function call is a transition (the graph walk), a tool (tool-calls.ts; the caller is
 * muted while it runs) or unknown; a tool that ends or hands over the call begins the closing. A barge-in aborts the
 * stream and keeps what was heard in the context.
 */
import type { ToolCall } from '../models/types'
import { completionRequest, takePreparedReply } from './prepared-reply'
import { closeTurn, openTurn, playRecording, speak, streamText } from './agent-turns'
import { beginClosing, finish, type ToolSpeech } from './closing'
import { nodeFunctions, type NodeFunction } from './graph'
import { awaitMentionedExtractions, offersClips, takeTransition } from './nodes'
import { createReplyRouter, type RoutedPiece } from './recording-replies'
import { runToolCall, type ToolCallHost } from './tool-calls'
import { recordEvent, render, warn, type EngineState, type OpenTurn, type PendingReply } from './engine-state'

/** Bounds tool-call chains in one reply, so a model calling functions forever cannot hang the call. */
const MAX_COMPLETIONS_PER_REPLY = 6

export type ReplyOptions = { instruction?: string; offerFunctions?: boolean }

/** The agent's reply: completions until it stops calling functions; entering an End node ends the call after it. */
export async function reply(s: EngineState, replyOptions: ReplyOptions = {}): Promise<void> {
  let settle!: () => void
  const current: PendingReply = {
    controller: new AbortController(),
    done: new Promise((resolve) => {
      settle = resolve
    }),
    open: null,
    toolRunning: false,
  }
  s.pending = current
  s.idleSince = null
  try {
    for (let completions = 1; await complete(s, current, replyOptions); completions++) {
      if (completions === MAX_COMPLETIONS_PER_REPLY) {
        warn(s, `The LLM called functions ${completions} times in a row; its reply was cut short`)
        break
      }
    }
    if (!current.controller.signal.aborted && s.closing && !s.closing.awaitHeard)
      await finish(s, s.closing.reason, s.closing.disposition)
    else if (!current.controller.signal.aborted && !s.closing && s.node.type === 'endCall')
      await finish(s, 'user_qualified')
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    recordEvent(s, 'rtf-pipeline-error', { error: message, fatal: true, processor: s.llm.ref.service })
    warn(s, `The LLM failed: ${message}`)
    await finish(s, 'pipeline_error')
  } finally {
    s.pending = null
    if (!s.endReason) s.idleSince = s.clock.now()
    settle()
  }
}

/** One completion under the current node. True when it called functions, so the model must speak again (not when aborted). */
async function complete(
  s: EngineState,
  current: PendingReply,
  { instruction, offerFunctions = true }: ReplyOptions,
): Promise<boolean> {
  await awaitMentionedExtractions(s)
  if (current.controller.signal.aborted) return false
  const functions = offerFunctions ? nodeFunctions(s.graph, s.node, s.tools) : []
  const { turn, calls } = await streamCompletion(s, current, functions, instruction)
  if (current.controller.signal.aborted) {
    if (turn) keepHeardPart(s, turn)
    return false
  }
  if (turn) closeTurn(s, turn, false)
  if (!turn && calls.length === 0) return false
  const message = {
    role: 'assistant' as const,
    content: turn?.text || null,
    ...(calls.length ? { toolCalls: calls } : {}),
  }
  s.history.push(message)
  if (turn) s.turnMessages.set(turn.index, message)
  await runFunctionCalls(s, current, functions, calls, turn)
  return calls.length > 0 && s.closing === null
}

/** Streams one completion: its text into a new agent turn (opened at the first piece), its function calls collected. */
async function streamCompletion(
  s: EngineState,
  current: PendingReply,
  functions: NodeFunction[],
  instruction?: string,
): Promise<{ turn: OpenTurn | null; calls: ToolCall[] }> {
  const request = completionRequest(s, functions, instruction)
  const { signal } = current.controller
  const requestedAt = s.clock.now()
  const calls: ToolCall[] = []
  try {
    const stream = takePreparedReply(s, request, signal) ?? s.llm.stream({ ...request, signal })
    const router = offersClips(s) ? createReplyRouter() : null
    const say = (pieces: RoutedPiece[]) => {
      for (const piece of pieces) {
        const recording = piece.kind === 'recording' ? s.options.recordings?.get(piece.recordingId) : undefined
        if (piece.kind === 'recording' && !recording) {
          warn(s, `The LLM chose recording '${piece.recordingId}', which this organization does not have`)
          continue
        }
        if (!current.open) {
          current.open = openTurn(s, 'reply')
          recordEvent(s, 'rtf-ttfb-metric', {
            ttfb_seconds: (s.clock.now() - requestedAt) / 1000,
            processor: s.llm.ref.service,
            model: s.llm.ref.model,
          })
        }
        if (piece.kind === 'text') streamText(s, current.open, piece.text)
        else
          streamText(
            s,
            current.open,
            recording!.transcript.trim() || `[recording ${piece.recordingId}]`,
            piece.recordingId,
          )
      }
    }
    for await (const event of stream) {
      if (signal.aborted) break
      if (event.type === 'text' && event.text !== '')
        say(router ? router.push(event.text) : [{ kind: 'text', text: event.text }])
      else if (event.type === 'tool_call') calls.push(event.call)
      else if (event.type === 'done')
        s.onEvent({ type: 'usage', ref: s.llm.ref, usage: event.usage, purpose: 'conversation' })
    }
    if (router && !signal.aborted) say(router.end())
  } catch (error) {
    if (!signal.aborted) throw error
  }
  const turn = current.open
  current.open = null
  return { turn, calls }
}

/** A reply cut while streaming: its turn is interrupted, and the context keeps what was heard of it. */
function keepHeardPart(s: EngineState, turn: OpenTurn): void {
  closeTurn(s, turn, true)
  const heard = s.transcript[turn.index].text
  if (!heard) return
  const message = { role: 'assistant' as const, content: heard }
  s.history.push(message)
  s.turnMessages.set(turn.index, message)
}

async function runFunctionCalls(
  s: EngineState,
  current: PendingReply,
  functions: NodeFunction[],
  calls: ToolCall[],
  turn: OpenTurn | null,
): Promise<void> {
  let moved = false
  for (const call of calls) {
    recordEvent(s, 'rtf-function-call-start', {
      function_name: call.name,
      tool_call_id: call.id,
      arguments: call.arguments,
    })
    const fn = functions.find(({ spec }) => spec.name === call.name)
    let result: Record<string, unknown>
    if (!fn) result = { status: 'error', error: `There is no function named ${call.name}` }
    else if (moved) result = { status: 'ignored', reason: 'The conversation already moved to another step' }
    else if (fn.kind === 'transition') {
      takeTransition(s, fn, call)
      moved = true
      result = { status: 'done' }
    } else {
      const said: ToolSpeech = { turn: turn?.index ?? null }
      current.toolRunning = true
      const outcome = await runToolCall(fn, call, toolHost(s, current, said), s.node.id).finally(() => {
        current.toolRunning = false
      })
      s.toolCalls.push(outcome.log)
      result = outcome.result
      if (outcome.effect.kind !== 'none') {
        moved = true
        beginClosing(s, outcome.effect, said)
      }
    }
    if (fn?.kind !== 'transition')
      s.onEvent({ type: 'tool_call', node_id: s.node.id, function_name: call.name, arguments: call.arguments, result })
    const content = JSON.stringify(result)
    s.history.push({ role: 'tool', toolCallId: call.id, content })
    recordEvent(s, 'rtf-function-call-end', { function_name: call.name, tool_call_id: call.id, result: content })
  }
}

function toolHost(s: EngineState, current: PendingReply, said: ToolSpeech): ToolCallHost {
  return {
    tools: s.options.tools,
    transferCall: s.options.transferCall,
    say(message) {
      if ('text' in message) speak(s, message.text, 'tool_message', false)
      else if (!playRecording(s, message.recordingId, 'tool_message', false)) return
      said.turn = s.transcript.length - 1
    },
    render: (text) => render(s, text),
    variables: () => ({ ...s.options.variables, ...s.extracted, gathered_context: structuredClone(s.gathered) }),
    now: () => s.clock.now(),
    signal: current.controller.signal,
  }
}
