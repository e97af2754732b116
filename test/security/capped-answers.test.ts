import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { DomainError } from '../../src/lib/errors'
import { CARRIER_ANSWER_MAX_BYTES, callCarrier } from '../../src/telephony/carriers/http'
import { AriError, createAriRest } from '../../src/telephony/ari/rest'
import { createTestApp, type TestApp } from '../support/app'
import { floodBody } from '../support/flood'

/*
 * Carriers' REST APIs and Asterisk's ARI are servers we call too: their answers are read under a byte cap, the rest is
 * never read (the server below counts what it handed over), and the request fails with an error naming the cap.
 */

const MiB = 1024 * 1024
/** What may have left the server beyond what the client read: socket and stream buffers on both sides. */
const BUFFERS = 32 * MiB

let t: TestApp
let sent = 0
let requests = 0
let status = 200
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch: () => {
    requests++
    return new Response(
      floodBody(256 * MiB, {
        prefix: '{"message":"',
        sent: (bytes) => {
          sent += bytes
        },
      }),
      { status, headers: { 'content-type': 'application/json' } },
    )
  },
})
const baseUrl = `http://127.0.0.1:${server.port}`

beforeAll(() => {
  t = createTestApp()
})
afterAll(() => {
  server.stop(true)
  t.close()
})

test.each([200, 400])(
  'a carrier answering 256 MB (HTTP %d): the call fails naming the cap, and a dial is not sent again',
  async (answerStatus) => {
    status = answerStatus
    sent = 0
    requests = 0
    const error = await callCarrier(t.ctx, {
      provider: 'twilio',
      displayName: 'Twilio',
      baseUrl,
      action: 'place the call',
      method: 'POST',
      path: '/calls',
      headers: {},
      json: {},
    }).then(
      () => null,
      (caught: DomainError) => caught,
    )
    expect(error).toMatchObject({
      kind: 'upstream_failed',
      detail: `Failed to reach Twilio to place the call: an answer larger than ${CARRIER_ANSWER_MAX_BYTES} bytes`,
    })
    expect(sent).toBeLessThan(CARRIER_ANSWER_MAX_BYTES + BUFFERS)
    expect(requests).toBe(1)
  },
)

test.each([200, 500])(
  'Asterisk answering 256 MB (HTTP %d): the ARI request fails, the rest is never read',
  async (answerStatus) => {
    status = answerStatus
    sent = 0
    const rest = createAriRest({ endpoint: baseUrl, username: 'u', password: 'p', app: 'ringbase' })
    const error = await rest.listChannels().then(
      () => null,
      (caught) => caught,
    )
    expect(error).toBeInstanceOf(AriError)
    expect(error.status).toBe(answerStatus)
    if (answerStatus === 200) expect(error.message).toMatch(/^an answer larger than \d+ bytes$/)
    expect(sent).toBeLessThan(BUFFERS)
  },
)
