import { afterEach, expect, test } from 'bun:test'
import { configureModelsNeverAsked } from '../../support/voice-models'
import {
  createCarrierAgent,
  createCarrierLine,
  loggedStatuses,
  placeCarrierCall,
  untilRunCompleted,
} from '../../support/fake-carriers/calls'
import { createCarrierTestApp, type CarrierTestApp } from '../../support/fake-carriers/shared'
import { startFakeTwilio, type FakeTwilio } from '../../support/fake-carriers/twilio'
import { waitFor } from '../../support/wait'

// Behind a load balancer a carrier's callbacks reach any instance: what one instance placed, another settles through
// the database they share (SQLite here; PostgreSQL when test/postgres-api.test.ts runs this file).

let first: CarrierTestApp
let second: CarrierTestApp
let fake: FakeTwilio
afterEach(() => {
  fake?.stop()
  second?.stopServer()
  second?.close({ keepData: true })
  first?.stopServer()
  first?.close()
})

test('a call placed by one instance is settled by status callbacks that reach the other', async () => {
  first = createCarrierTestApp()
  second = createCarrierTestApp({ beside: first })
  fake = startFakeTwilio({ reach: second.reach, plan: () => ({ outcome: 'busy' }) })
  first.ctx.providerApis.twilio = fake.baseUrl
  const agent = await createCarrierAgent(first)
  await createCarrierLine(first, { provider: 'twilio', account_sid: fake.accountSid, auth_token: fake.authToken })
  await configureModelsNeverAsked(first)

  const runId = await placeCarrierCall(first, agent)
  const row = await untilRunCompleted(first, runId)
  expect(row).toMatchObject({ disposition: 'busy', call_duration_seconds: 0 })
  expect(loggedStatuses(row)).toEqual(['initiated', 'ringing', 'busy'])
  // Only the second instance heard from Twilio, and it took every status.
  const callbacks = `"path":"/api/v1/telephony/twilio/status-callback/${runId}","status":200`
  await waitFor('the three callbacks logged', () => second.logText().split(callbacks).length - 1 === 3)
  expect(first.logText()).not.toContain('status-callback')
})
