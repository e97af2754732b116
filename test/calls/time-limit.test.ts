import { afterEach, expect, test } from 'bun:test'
import { timeLimitOf } from '../../src/calls/time-limit'
import type { manualClock } from '../../src/lib/clock'
import type { AnsweredCall, CallTransferResult } from '../../src/telephony/ari/call-session'
import { createTestApp, type TestApp } from '../support/app'
import { waitFor } from '../support/wait'

/**
 * The one enforcer of a call's time limit, on its own: counted from the answer, it ends the conversation and hangs the
 * call up with `max_call_duration`; a connected transfer or the call's end lifts it. A call on ARI and on a carrier
 * ended at its limit end to end: test/calls/voice-call.test.ts, test/telephony/carriers/twilio-conversation.test.ts.
 */

let t: TestApp
afterEach(() => t?.close())

function fakeCall(transferResult: CallTransferResult = { status: 'transferred' }) {
  const hangups: (string | undefined)[] = []
  let endCall!: () => void
  const call = {
    callId: 'call-1',
    runId: 1,
    organizationId: 1,
    configurationId: 1,
    direction: 'outbound',
    ended: new Promise<void>((resolve) => {
      endCall = resolve
    }),
    reported: new Promise<void>(() => {}),
    hangup: async (providerStatus?: string) => {
      hangups.push(providerStatus)
    },
    transfer: async () => transferResult,
  } as unknown as AnsweredCall
  return { call, hangups, endCall }
}

test('at the limit, counted from the answer: the conversation is ended and the call hung up with max_call_duration', async () => {
  t = createTestApp()
  const { call, hangups } = fakeCall()
  const limit = timeLimitOf(t.ctx, call)
  // The conversation took its time to open: ten minutes since the answer, a 600-second limit is reached at once.
  ;(t.ctx.clock as ReturnType<typeof manualClock>).advance(600_000)
  let reached = 0
  limit.start(600, () => reached++)
  await waitFor('the limit reached', () => hangups.length === 1)
  expect(reached).toBe(1)
  expect(hangups).toEqual(['max_call_duration'])
})

test('a transfer that connected lifts the limit; one that failed does not', async () => {
  t = createTestApp()
  const transferred = fakeCall({ status: 'transferred' })
  const failed = fakeCall({ status: 'failed', reason: 'busy', message: 'Busy' })
  const lifted = timeLimitOf(t.ctx, transferred.call)
  const kept = timeLimitOf(t.ctx, failed.call)
  await lifted.call.transfer!({ destination: '+15550001', timeoutSeconds: 5 })
  await kept.call.transfer!({ destination: '+15550001', timeoutSeconds: 5 })
  lifted.start(0.05, () => {})
  kept.start(0.05, () => {})
  await waitFor('the kept limit reached', () => failed.hangups.length === 1)
  await Bun.sleep(100)
  expect(transferred.hangups).toEqual([])
})

test("the call's end lifts the limit", async () => {
  t = createTestApp()
  const { call, hangups, endCall } = fakeCall()
  const limit = timeLimitOf(t.ctx, call)
  limit.start(0.1, () => {})
  endCall()
  await Bun.sleep(200)
  expect(hangups).toEqual([])
})
