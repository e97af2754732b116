import { afterEach, beforeEach, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { createCarrierAgent, triggerCall } from '../../support/fake-carriers/calls'
import {
  createCarrierTestApp,
  PUBLIC_URL,
  startFakeServer,
  type CarrierTestApp,
  type FakeServer,
} from '../../support/fake-carriers/shared'
import { addPhoneNumber, createConfiguration } from '../../support/telephony'

/**
 * WhatsApp Business Calling: the webhook handshake and signature, call signalling answered by a rejection through a
 * fake Graph API (its WebRTC audio cannot be carried), and runs refused with the reason.
 */

const WEBHOOK = `${PUBLIC_URL}/api/v1/telephony/whatsapp/webhook`
const APP_SECRET = 'wa-app-secret-0001'
let t: CarrierTestApp
let graph: FakeServer
let verifyToken: string
let configurationId: number

beforeEach(async () => {
  t = createCarrierTestApp()
  graph = startFakeServer((request) =>
    request.path.endsWith('/calls') ? Response.json({ messaging_product: 'whatsapp', success: true }) : null,
  )
  t.ctx.providerApis.whatsapp = graph.baseUrl
  const configuration = await createConfiguration(t, 'wa', {
    provider: 'whatsapp',
    access_token: 'EAAG-access-token',
    waba_id: 'waba-77',
    app_secret: APP_SECRET,
  })
  configurationId = configuration.id
  verifyToken = configuration.credentials.webhook_verify_token
})
afterEach(() => {
  graph.stop()
  t.stopServer()
  t.close()
})

const signed = (body: string, secret = APP_SECRET) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
const deliver = (body: unknown, signature: string | null) => {
  const text = JSON.stringify(body)
  return fetch(t.reach(WEBHOOK), {
    method: 'POST',
    body: text,
    headers: {
      'content-type': 'application/json',
      ...(signature === null ? {} : { 'x-hub-signature-256': signature === 'valid' ? signed(text) : signature }),
    },
  })
}
const offer = (callId: string) => ({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: 'waba-77',
      changes: [
        {
          field: 'calls',
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '14155550100', phone_number_id: 'pn-1' },
            calls: [
              {
                id: callId,
                from: '447700900123',
                to: '14155550100',
                event: 'connect',
                timestamp: '1760000000',
                session: { sdp_type: 'offer', sdp: 'v=0...' },
              },
            ],
          },
        },
      ],
    },
  ],
})

test('the subscription handshake echoes the challenge for our verify token only', async () => {
  const handshake = (token: string) =>
    fetch(t.reach(`${WEBHOOK}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`))
  const ok = await handshake(verifyToken)
  expect(ok.status).toBe(200)
  expect(await ok.text()).toBe('1158201444')
  expect((await handshake('not-ours')).status).toBe(403)
})

test('an offered call, signed with the app secret, is rejected through the Graph API; unsigned → 401, forged → 403', async () => {
  expect((await deliver(offer('wacid.1'), null)).status).toBe(401)
  expect((await deliver(offer('wacid.1'), signed('{}'))).status).toBe(403)
  expect((await deliver(offer('wacid.1'), signed(JSON.stringify(offer('wacid.1')), 'other-secret'))).status).toBe(403)
  expect(graph.requests).toEqual([])
  expect((await deliver(offer('wacid.1'), 'valid')).status).toBe(200)
  expect(graph.requests).toHaveLength(1)
  expect(graph.requests[0]).toMatchObject({
    method: 'POST',
    path: '/pn-1/calls',
    body: { messaging_product: 'whatsapp', call_id: 'wacid.1', action: 'reject' },
  })
  expect(graph.requests[0].headers.get('authorization')).toBe('Bearer EAAG-access-token')
  expect(t.ctx.sqlite.query('SELECT count(*) AS n FROM workflow_runs').get()).toEqual({ n: 0 })
})

test('runs on WhatsApp are refused with the reason, and the provider metadata says it', async () => {
  await addPhoneNumber(t, configurationId, { address: '+14155550100' })
  const agent = await createCarrierAgent(t)
  const response = await t.request('POST', `/api/v1/public/agent/${agent.triggerPath}`, {
    body: { phone_number: '+14155550123', telephony_configuration_id: configurationId },
  })
  expect(response.status).toBe(400)
  expect(response.body.detail).toContain('WebRTC')
  const metadata = (await t.request('GET', '/api/v1/organizations/telephony-providers/metadata')).body.providers.find(
    (provider: { provider: string }) => provider.provider === 'whatsapp',
  )
  expect(JSON.stringify(metadata)).toContain('WebRTC')
  expect((await triggerCall(t, agent, '+14155550123')).status).toBe(400)
})
