// The run page's waveforms of a long call: `bun scripts/bench/recording-peaks.ts [minutes] [rounds]` (default 60 and
// 5). Stores a stereo recording of that length (8 kHz, 115 MB for an hour) on the local object store and reads its
// peaks in process as `GET …/runs/{run_id}/recording-peaks` does, reporting per round the wall time, the CPU time and
// the event loop's longest wait meanwhile (a 1 ms timer's longest gap): what calls in progress would feel. Each round
// asks another column count (peaks drawn once are kept), then the last is asked again.
import { recordingPeaks } from '../../src/runs/recording-peaks'
import { interleavedPieces, wavStream } from '../../src/lib/wav'
import { createTestApp } from '../../test/support/app'
import { createAgent, seedRun } from '../../test/support/agents'

const minutes = Number(process.argv[2] ?? 60)
const rounds = Number(process.argv[3] ?? 5)
const frames = minutes * 60 * 8000
const t = createTestApp()
try {
  const caller = Int16Array.from({ length: frames }, (_, index) => (index * 7) % 20_000)
  const agent = Int16Array.from({ length: frames }, (_, index) => -((index * 3) % 20_000))
  const key = 'recordings/1/bench.wav'
  await t.ctx.objects.put(key, wavStream(interleavedPieces([caller, agent], 0, frames, 8000), frames, 8000, 2))
  const owner = await createAgent(t, 'Bench')
  const run = seedRun(t, {
    organizationId: 1,
    agent: owner,
    outcome: { durationSeconds: minutes * 60, disposition: 'completed' },
    artifacts: { recording: key },
  })
  for (let round = 1; round <= rounds + 1; round++) {
    const columns = 300 + Math.min(round, rounds)
    let longestGapMs = 0
    let lastTick = performance.now()
    const watch = setInterval(() => {
      const now = performance.now()
      longestGapMs = Math.max(longestGapMs, now - lastTick)
      lastTick = now
    }, 1)
    const cpuBefore = process.cpuUsage()
    const startedAt = performance.now()
    await recordingPeaks(t.ctx, 1, owner.id, run.id, columns)
    const wallMs = performance.now() - startedAt
    const cpu = process.cpuUsage(cpuBefore)
    clearInterval(watch)
    longestGapMs = Math.max(longestGapMs, performance.now() - lastTick)
    console.log(
      JSON.stringify({
        round: round > rounds ? 'asked again' : round,
        minutes,
        megabytes: Math.round((frames * 4) / 1e6),
        wall_ms: Math.round(wallMs),
        cpu_ms: Math.round((cpu.user + cpu.system) / 1000),
        event_loop_longest_wait_ms: Math.round(longestGapMs * 10) / 10,
      }),
    )
  }
} finally {
  t.close()
}
