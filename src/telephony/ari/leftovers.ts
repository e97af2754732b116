import { callIdOfBridge, callIdOfMediaChannel, hangupIgnoringGone, ignoreGone } from './call-session'
import type { CallOwnership } from '../provider'
import type { AriRest } from './rest'

/**
 * What a call session creates on Asterisk outlives our process: a bridge (`ringbase-<callId>`) stays until someone
 * destroys it, a media leg's channel (`<callId>-media`) until it is hung up. After a crash nobody will. These
 * are found by name and removed when the call they are named after is one of our runs and that run is closed; an
 * open call's objects and anything not named after one of our calls (another application's, another installation's)
 * are left alone.
 */
export async function removeAriLeftovers(
  rest: AriRest,
  ownership: (callId: string) => CallOwnership,
): Promise<string[]> {
  const closed = (callId: string) => callId !== '' && ownership(callId) === 'closed'
  const bridges = (await rest.listBridges()).filter((bridge) => closed(callIdOfBridge(bridge.id)))
  const channels = (await rest.listChannels()).filter((channel) => closed(callIdOfMediaChannel(channel.id)))
  await Promise.all([
    ...channels.map((channel) => hangupIgnoringGone(rest, channel.id)),
    ...bridges.map((bridge) => rest.destroyBridge(bridge.id).catch(ignoreGone)),
  ])
  return [...bridges.map((bridge) => `bridge ${bridge.id}`), ...channels.map((channel) => `channel ${channel.id}`)]
}
