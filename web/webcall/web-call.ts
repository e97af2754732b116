// A voice call from the browser: the microphone (echo cancellation, noise suppression and gain control on) through an
// AudioWorklet to the call's WebSocket as 16-bit PCM, and the agent's audio back through another worklet, flushed on
// a barge-in. The protocol is the server's (src/voice/web-media.ts, docs/console.md).
import { api } from '../api'
import workletUrl from './audio-worklet.js' with { type: 'file' }

/** The rate the page's audio runs at both ways: the browser resamples the microphone to it. */
const SAMPLE_RATE = 16_000

export type TranscriptLine = { role: 'user' | 'agent'; text: string; interrupted?: boolean }

export type WebCallEvents = {
  onState(state: 'connecting' | 'live' | 'ended', detail?: string): void
  onLevel(level: number): void
  onTranscript(line: TranscriptLine): void
  /** Agent audio received (frames) and played (samples at SAMPLE_RATE). */
  onAgentAudio(progress: { frames: number; playedSamples: number }): void
}

export type WebCall = { runId: number; hangUp(): void }

type Started = { workflow_run_id: number; socket_path: string }

/** Why a socket closed, as the server's close codes say it. */
function endedBecause(code: number, reason: string): string {
  if (code === 1000 || code === 1005) return 'The call has ended.'
  if (code === 4401) return 'Signed out: the call was closed.'
  return `The call was closed (${code}${reason ? `: ${reason}` : ''}).`
}

export async function startWebCall(agentId: number, events: WebCallEvents): Promise<WebCall> {
  events.onState('connecting')
  const microphone = await navigator.mediaDevices.getUserMedia({
    audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true, channelCount: 1 },
  })
  const audio = new AudioContext({ sampleRate: SAMPLE_RATE, latencyHint: 'interactive' })
  const stopAudio = () => {
    for (const track of microphone.getTracks()) track.stop()
    void audio.close()
  }
  let started: Started
  try {
    await audio.audioWorklet.addModule(workletUrl)
    started = await api<Started>('POST', `/api/v1/workflow/${agentId}/web-calls`, {})
  } catch (error) {
    stopAudio()
    throw error
  }
  const capture = new AudioWorkletNode(audio, 'ringbase-capture')
  const playback = new AudioWorkletNode(audio, 'ringbase-playback')
  // The capture node only runs while the graph pulls it: through a muted gain to the speakers.
  const mute = audio.createGain()
  mute.gain.value = 0
  audio.createMediaStreamSource(microphone).connect(capture).connect(mute).connect(audio.destination)
  playback.connect(audio.destination)

  const socket = new WebSocket(
    `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${started.socket_path}`,
  )
  socket.binaryType = 'arraybuffer'
  let frames = 0
  let live = false
  capture.port.onmessage = ({ data }) => {
    events.onLevel(data.level)
    if (live && socket.readyState === WebSocket.OPEN) socket.send(data.pcm)
  }
  playback.port.onmessage = ({ data }) => {
    if (data.type === 'played') socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify(data))
    else events.onAgentAudio({ frames, playedSamples: data.played })
  }
  socket.onopen = () => socket.send(JSON.stringify({ type: 'start', sample_rate: SAMPLE_RATE }))
  socket.onmessage = ({ data }) => {
    if (typeof data !== 'string') {
      const pcm = new Int16Array(data as ArrayBuffer)
      const samples = new Float32Array(pcm.length)
      for (let index = 0; index < pcm.length; index++) samples[index] = pcm[index] / 0x8000
      frames++
      playback.port.postMessage({ type: 'audio', samples }, [samples.buffer])
      return
    }
    const message = JSON.parse(data)
    if (message.type === 'ready') {
      live = true
      events.onState('live')
    } else if (message.type === 'mark' || message.type === 'clear') playback.port.postMessage(message)
    else if (message.type === 'transcript') events.onTranscript(message)
  }
  socket.onclose = (event) => {
    live = false
    stopAudio()
    events.onState('ended', endedBecause(event.code, event.reason))
  }
  return {
    runId: started.workflow_run_id,
    hangUp() {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'hangup' }))
      else socket.close()
    },
  }
}
