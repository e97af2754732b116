import { describe, expect, test } from 'bun:test'
import { createReplyRouter, type RoutedPiece } from '../../src/conversation/recording-replies'

function routed(...pieces: string[]): RoutedPiece[] {
  const router = createReplyRouter()
  return [...pieces.flatMap((piece) => router.push(piece)), ...router.end()]
}

const spoken = (pieces: RoutedPiece[]) =>
  pieces.map((piece) => (piece.kind === 'text' ? piece.text : `<${piece.recordingId}>`)).join('')

describe('reply router (RECORDING_ID: mode)', () => {
  test('● and an id plays that recording, whatever follows it, even split across pieces', () => {
    expect(routed('● wel', 'come_v2 [Hello and welcome]')).toEqual([{ kind: 'recording', recordingId: 'welcome_v2' }])
    expect(routed('  ●', ' bye')).toEqual([{ kind: 'recording', recordingId: 'bye' }])
  })

  test('▸ speaks the text after it (marker and one space dropped), streamed as it comes', () => {
    const router = createReplyRouter()
    expect(router.push('▸')).toEqual([])
    expect(router.push(' We open')).toEqual([{ kind: 'text', text: 'We open' }])
    expect(router.push(' at nine.')).toEqual([{ kind: 'text', text: ' at nine.' }])
    expect(router.end()).toEqual([])
  })

  test('a ● after spoken text stops the speech there', () => {
    expect(spoken(routed('▸ Sure. ', '● closing'))).toBe('Sure. ')
  })

  test('no marker at the start: the reply is spoken unchanged, a later marker included', () => {
    expect(spoken(routed('Hello ● there'))).toBe('Hello ● there')
  })

  test('an empty play marker plays nothing', () => {
    expect(routed('●  ')).toEqual([])
  })
})
