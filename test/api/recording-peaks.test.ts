import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { encodeWav } from '../../src/lib/wav'
import { createTestApp, type TestApp } from '../support/app'
import { createAgent, seedRun } from '../support/agents'

/**
 * A run's recording as waveforms (`GET …/runs/{run_id}/recording-peaks`): read from the stored stereo WAV as it streams,
 * per track the loudest sample of each column; scoped to the organization and the agent like the run itself.
 */

let t: TestApp
beforeEach(() => {
  t = createTestApp()
})
afterEach(() => t.close())

const RATE = 8000
/** Two seconds: the caller speaks (half scale) in the first second, the agent (full scale, negative) in the second. */
function conversationWav(): Uint8Array {
  const caller = new Int16Array(2 * RATE)
  const agent = new Int16Array(2 * RATE)
  for (let i = 0; i < RATE; i++) caller[i] = i % 2 ? 16384 : -16384
  for (let i = RATE; i < 2 * RATE; i++) agent[i] = -32768
  return encodeWav([caller, agent], RATE)
}

async function runWithRecording(organizationId = 1, key?: string) {
  const agent = await createAgent(t, `Agent ${crypto.randomUUID()}`, key)
  const recordingKey = `recordings/${organizationId}/${crypto.randomUUID()}.wav`
  await t.ctx.objects.put(recordingKey, conversationWav())
  const run = seedRun(t, {
    organizationId,
    agent,
    outcome: { durationSeconds: 2, disposition: 'completed' },
    artifacts: { recording: recordingKey },
  })
  return { agent, run, recordingKey, path: `/api/v1/workflow/${agent.id}/runs/${run.id}/recording-peaks` }
}

describe('recording peaks', () => {
  test('per track and column, the loudest sample: the caller in the first half, the agent in the second', async () => {
    const { path } = await runWithRecording()
    const response = await t.request('GET', `${path}?columns=4`)
    expect(response.status, response.text).toBe(200)
    expect(response.body).toEqual({
      duration_seconds: 2,
      tracks: [
        [0.5, 0.5, 0, 0],
        [0, 0, 1, 1],
      ],
    })
    const byDefault = await t.request('GET', path)
    expect(byDefault.body.tracks.map((track: number[]) => track.length)).toEqual([300, 300])
  })

  test('a recording is read once per column count: asked again, the peaks drawn first answer; a deleted one is 404', async () => {
    const { path, recordingKey } = await runWithRecording()
    const first = (await t.request('GET', `${path}?columns=4`)).body
    // Stored recordings never change: one replaced underneath, at the same size, shows whether it was read again.
    const silent = encodeWav([new Int16Array(2 * RATE), new Int16Array(2 * RATE)], RATE)
    await t.ctx.objects.put(recordingKey, silent)
    expect((await t.request('GET', `${path}?columns=4`)).body).toEqual(first)
    expect((await t.request('GET', `${path}?columns=2`)).body.tracks).toEqual([
      [0, 0],
      [0, 0],
    ])
    await t.ctx.objects.delete(recordingKey)
    expect((await t.request('GET', `${path}?columns=4`)).status).toBe(404)
  })

  test('a WAV read in pieces of odd lengths gives the same peaks', async () => {
    const { path, run } = await runWithRecording()
    const whole = (await t.request('GET', `${path}?columns=7`)).body
    const bytes = conversationWav()
    const key = `recordings/1/odd-${run.id}.wav`
    let at = 0
    const pieces = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.length) return controller.close()
        controller.enqueue(bytes.subarray(at, at + 4097))
        at += 4097
      },
    })
    await t.ctx.objects.put(key, pieces)
    const { run: oddRun, agent } = await runWithRecording()
    t.ctx.db.run(`UPDATE workflow_runs SET recording_key = '${key}' WHERE id = ${oddRun.id}`)
    const odd = await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${oddRun.id}/recording-peaks?columns=7`)
    expect(odd.body).toEqual(whole)
  })

  test('no recording, an unreadable one, another agent or organization: 404; a trigger key may read them; columns bounded', async () => {
    const { agent, run, path } = await runWithRecording()
    const withoutRecording = seedRun(t, { organizationId: 1, agent, outcome: { durationSeconds: 1, disposition: 'x' } })
    const none = await t.request('GET', `/api/v1/workflow/${agent.id}/runs/${withoutRecording.id}/recording-peaks`)
    expect(none.status).toBe(404)
    expect(none.body.detail).toBe('No recording available for this workflow run')

    const other = t.newOrg('other')
    expect((await t.request('GET', path, { key: other.key })).status).toBe(404)
    const otherAgent = await createAgent(t, 'Other agent')
    expect((await t.request('GET', `/api/v1/workflow/${otherAgent.id}/runs/${run.id}/recording-peaks`)).status).toBe(
      404,
    )

    const third = t.newOrg('third')
    const triggerKey = (
      await t.request('POST', '/api/v1/user/api-keys', { key: third.key, body: { name: 'calls', scope: 'trigger' } })
    ).body.api_key
    const triggered = await runWithRecording(third.organizationId, third.key)
    expect((await t.request('GET', triggered.path, { key: triggerKey })).status).toBe(200)
    expect((await t.request('GET', path, { key: null })).status).toBe(401)

    for (const columns of ['0', '2001', 'x'])
      expect((await t.request('GET', `${path}?columns=${columns}`)).status).toBe(422)

    await t.ctx.objects.put(`recordings/1/junk-${run.id}.wav`, 'not a wav at all, only text')
    t.ctx.db.run(`UPDATE workflow_runs SET recording_key = 'recordings/1/junk-${run.id}.wav' WHERE id = ${run.id}`)
    expect((await t.request('GET', path)).status).toBe(404)
  })
})
