/**
 * The seam between a call's audio and wherever it travels (ARI externalMedia today, carrier media streams later).
 * Audio both ways is 8 kHz G.711 µ-law; times are milliseconds on the transport's clock.
 */

/** How a media socket ended. `initiatedBy: 'app'` only after close(); anything else (hangup, drop) is 'remote'. */
export type MediaClose = { code: number; reason: string; initiatedBy: 'app' | 'remote' }

/** played: all audio sent before the mark was heard; flushed: a flush dropped it; closed: the socket ended first. */
export type MarkOutcome = 'played' | 'flushed' | 'closed'

export interface MediaTransport {
  /** Caller audio as it arrives: one frame of µ-law and the time it arrived (the frame ended then). */
  onAudio(listener: (ulaw: Uint8Array, atMs: number) => void): void
  /** Called once when the media ends, whoever ended it. */
  onClose(listener: (close: MediaClose) => void): void
  /** Queues agent audio (µ-law, any length) after what is already queued; the far end plays it in real time. The array is kept until sent: do not reuse it. */
  send(ulaw: Uint8Array): void
  /** Resolves once everything sent before it has been played, or when that will never happen. */
  mark(): Promise<MarkOutcome>
  /** Drops every queued agent audio at once (barge-in); pending marks resolve as 'flushed'. */
  flush(): void
  close(): void
  readonly closed: boolean
}
