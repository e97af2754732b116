import { afterEach, beforeEach, expect, test } from 'bun:test'
import { MEDIA_LEG } from '../../src/telephony/ari/call-session'
import { removeAriLeftovers } from '../../src/telephony/ari/leftovers'
import { createAriRest, type AriRest } from '../../src/telephony/ari/rest'
import {
  bridgeIdFor,
  callIdOfBridge,
  callIdOfMediaChannel,
  mediaChannelIdFor,
} from '../../src/telephony/ari/call-session'
import type { CallOwnership } from '../../src/telephony/provider'
import { startFakeAri, type FakeAri } from '../support/fake-ari'
import { waitFor } from '../support/wait'

/** What a crash leaves on Asterisk: bridges and media legs named after calls, found by name on the fake. */

let fake: FakeAri
let rest: AriRest
beforeEach(async () => {
  fake = await startFakeAri()
  rest = createAriRest(fake.settings())
})
afterEach(() => fake.close())

/** A media leg as the call session creates it (server mode, our channel id). */
const mediaLeg = (channelId: string) => rest.externalMedia({ channelId, ...MEDIA_LEG })

test('names: the call of a bridge and of a media leg, and nothing for ids of another shape', () => {
  expect(callIdOfMediaChannel(mediaChannelIdFor('c0ffee-1'))).toBe('c0ffee-1')
  expect(callIdOfBridge(bridgeIdFor('c0ffee-1'))).toBe('c0ffee-1')
  for (const other of ['c0ffee-1', 'c0ffee-1-media-1', 'c0ffee-1-transfer', 'c0ffee-1-media;2', '-media'])
    expect(callIdOfMediaChannel(other)).toBe('')
  expect(callIdOfBridge('other-application-bridge')).toBe('')
})

test("a closed call's bridge and media leg are removed; an open call's, an unknown call's and other names are left", async () => {
  const ownership: Record<string, CallOwnership> = { closed: 'closed', open: 'open' }
  for (const callId of ['closed', 'open', 'unknown']) {
    await rest.createBridge({ bridgeId: bridgeIdFor(callId), name: bridgeIdFor(callId) })
    await mediaLeg(mediaChannelIdFor(callId))
  }
  await rest.createBridge({ bridgeId: 'other-application-bridge' })
  await mediaLeg('closed-media-1')

  const removed = await removeAriLeftovers(rest, (callId) => ownership[callId] ?? 'unknown')
  expect(removed.sort()).toEqual(['bridge ringbase-closed', 'channel closed-media'])
  expect(fake.bridgeIds().sort()).toEqual(['other-application-bridge', 'ringbase-open', 'ringbase-unknown'])
  await waitFor('the hung up media leg gone', () => !fake.liveChannelIds().includes('closed-media'))
  expect(fake.liveChannelIds().sort()).toEqual(['closed-media-1', 'open-media', 'unknown-media'])
})
