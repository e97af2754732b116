/**
 * Agent audio to the line: the agent's track (right) of the recording, µ-law, the transport. A cut flushes what the
 * transport still queues (its pending marks resolve as flushed) and tells the recorder the rest was never heard.
 */
import { pcm16ToUlaw } from '../g711'
import type { MediaTransport } from '../media-transport'
import type { CallRecorder } from '../recorder'
import type { Stage, StageContext } from '../stage'

export function lineOutput(transport: MediaTransport, recorder: CallRecorder): Stage {
  let context: StageContext
  return {
    name: 'line output',
    start(given) {
      context = given
    },
    process(frame) {
      if (frame.kind !== 'agent_audio') return context.push(frame)
      if (frame.pcm.length === 0 || transport.closed) return
      recorder.agent(frame.pcm, frame.atMs)
      transport.send(pcm16ToUlaw(frame.pcm))
      return context.push(frame)
    },
    interrupt() {
      transport.flush()
      recorder.agentFlushed(context.now())
    },
  }
}
