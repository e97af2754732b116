import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash, createHmac, generateKeyPairSync, sign } from 'node:crypto'
import { createCarrierAgent, latestRunId, runRow } from '../support/fake-carriers/calls'
import { nonceSignatureOf } from '../support/fake-carriers/plivo'
import {
  connectMedia,
  createCarrierTestApp,
  formBody,
  PUBLIC_URL,
  startFakeServer,
  type CarrierTestApp,
  type FakeServer,
} from '../support/fake-carriers/shared'
import { twilioSignatureOf } from '../support/fake-carriers/twilio'
import { addPhoneNumber, createConfiguration } from '../support/telephony'

/**
 * Cross-tenant carrier callbacks, for every carrier that starts runs (WhatsApp never does: every call offered is
 * rejected). Organization A has a live inbound run; organization B, on the same carrier with its OWN secret, signs
 * webhooks correctly and names A's call id or A's run id. A callback resolves runs only within the configuration whose
 * secret verified it: B gets no media stream of A's run, starts no run, and changes nothing of A's.
 */

type Tenant = 'a' | 'b'
type Params = Record<string, string>

/** One carrier as both tenants see it: the configuration each saves, and webhooks signed with each one's secret. */
type CarrierCase = {
  provider: string
  config(tenant: Tenant): Record<string, unknown>
  /** The inbound webhook of a call from +447700900123 to `to` with the carrier's call id `callId`. */
  offer(tenant: Tenant, to: string, callId: string): Promise<Response>
  /** A final status of the call `callId` to `path` (a number-level URL, or one carrying a run id). */
  status(tenant: Tenant, path: string, callId: string): Promise<Response>
  /** Where the carrier sends status callbacks: `/api/v1/telephony/<provider>/<name>[/<run>]`. */
  statusPath: string
}

const CALLER = '+447700900123'

let t: CarrierTestApp
/** Answers every carrier API command (Telnyx answers inbound calls by command), recording them. */
let carrierApi: FakeServer

const url = (path: string) => `${PUBLIC_URL}${path}`
const post = (path: string, body: string, headers: Record<string, string>) =>
  fetch(t.reach(url(path)), { method: 'POST', body, headers })
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
const bare = (number: string) => number.slice(1)

function twilio(): CarrierCase {
  const token = (tenant: Tenant) => `twilio-token-${tenant}`
  const signed = (tenant: Tenant, path: string, params: Params) => {
    const form = formBody(params)
    return post(path, form.body, {
      ...form.headers,
      'x-twilio-signature': twilioSignatureOf(token(tenant), url(path), params),
    })
  }
  return {
    provider: 'twilio',
    statusPath: '/api/v1/telephony/twilio/status-callback',
    config: (tenant) => ({
      provider: 'twilio',
      account_sid: `AC0000000000000000000000000000000${tenant}`,
      auth_token: token(tenant),
    }),
    offer: (tenant, to, callId) =>
      signed(tenant, '/api/v1/telephony/inbound/run', {
        CallSid: callId,
        From: CALLER,
        To: to,
        CallStatus: 'ringing',
        Direction: 'inbound',
      }),
    status: (tenant, path, callId) =>
      signed(tenant, path, { CallSid: callId, CallStatus: 'completed', CallDuration: '14' }),
  }
}

function nonceSigned(variant: 'plivo' | 'vobiz'): CarrierCase {
  const token = (tenant: Tenant) => `${variant}-token-${tenant}`
  const header = variant === 'plivo' ? 'x-plivo-signature' : 'x-vobiz-signature'
  const signed = (tenant: Tenant, path: string, params: Params) => {
    const form = formBody(params)
    const nonce = String(Math.floor(Math.random() * 1e9))
    return post(path, form.body, {
      ...form.headers,
      [`${header}-v3`]: nonceSignatureOf(variant, token(tenant), url(path), params, nonce),
      [`${header}-v3-nonce`]: nonce,
    })
  }
  return {
    provider: variant,
    statusPath: `/api/v1/telephony/${variant}/hangup-callback`,
    config: (tenant) => ({
      provider: variant,
      auth_id: `MA${variant.toUpperCase()}AUTHID000${tenant}`,
      auth_token: token(tenant),
      application_id: `app-${tenant}`,
    }),
    offer: (tenant, to, callId) =>
      signed(tenant, '/api/v1/telephony/inbound/run', {
        CallUUID: callId,
        From: bare(CALLER),
        To: bare(to),
        Direction: 'inbound',
        CallStatus: 'ringing',
        Event: 'StartApp',
      }),
    status: (tenant, path, callId) =>
      signed(tenant, path, {
        CallUUID: callId,
        Direction: 'inbound',
        CallStatus: 'completed',
        Duration: '4',
        Event: 'Hangup',
      }),
  }
}

function telnyx(): CarrierCase {
  const keys = { a: generateKeyPairSync('ed25519'), b: generateKeyPairSync('ed25519') }
  const publicKey = (tenant: Tenant) =>
    Buffer.from(keys[tenant].publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')
  const event = (tenant: Tenant, path: string, eventType: string, payload: Record<string, unknown>) => {
    const body = JSON.stringify({
      data: {
        record_type: 'event',
        event_type: eventType,
        id: crypto.randomUUID(),
        occurred_at: new Date(t.ctx.clock.now()).toISOString(),
        payload,
      },
    })
    const timestamp = String(Math.floor(t.ctx.clock.now() / 1000))
    const signature = sign(null, Buffer.from(`${timestamp}|${body}`), keys[tenant].privateKey).toString('base64')
    return post(path, body, {
      'content-type': 'application/json',
      'telnyx-signature-ed25519': signature,
      'telnyx-timestamp': timestamp,
    })
  }
  return {
    provider: 'telnyx',
    statusPath: '/api/v1/telephony/telnyx/events',
    config: (tenant) => ({
      provider: 'telnyx',
      api_key: `KEY-telnyx-${tenant}`,
      connection_id: `conn-${tenant}`,
      webhook_public_key: publicKey(tenant),
    }),
    offer: (tenant, to, callId) =>
      event(tenant, '/api/v1/telephony/inbound/run', 'call.initiated', {
        call_control_id: callId,
        from: CALLER,
        to,
        direction: 'incoming',
        state: 'parked',
      }),
    status: (tenant, path, callId) =>
      event(tenant, path, 'call.hangup', { call_control_id: callId, hangup_cause: 'normal_clearing' }),
  }
}

function vonage(): CarrierCase {
  const apiKey = (tenant: Tenant) => `vonage-key-${tenant}`
  const token = (tenant: Tenant, body: string) => {
    const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const header = b64url({ alg: 'HS256', typ: 'JWT' })
    const claims = b64url({
      iat: Math.floor(t.ctx.clock.now() / 1000),
      jti: crypto.randomUUID(),
      iss: 'Vonage',
      api_key: apiKey(tenant),
      application_id: `vonage-app-${tenant}`,
      ...(body === '' ? {} : { payload_hash: createHash('sha256').update(body).digest('hex') }),
    })
    return `Bearer ${header}.${claims}.${createHmac('sha256', `vonage-signature-${tenant}`).update(`${header}.${claims}`).digest('base64url')}`
  }
  return {
    provider: 'vonage',
    statusPath: '/api/v1/telephony/vonage/events',
    config: (tenant) => ({
      provider: 'vonage',
      api_key: apiKey(tenant),
      api_secret: `vonage-secret-${tenant}`,
      application_id: `vonage-app-${tenant}`,
      private_key: '-----BEGIN PRIVATE KEY-----\nunused\n-----END PRIVATE KEY-----',
      signature_secret: `vonage-signature-${tenant}`,
    }),
    offer: (tenant, to, callId) =>
      fetch(
        t.reach(
          url(
            `/api/v1/telephony/vonage/inbound?to=${bare(to)}&from=${bare(CALLER)}&uuid=${callId}&conversation_uuid=CON-${callId}`,
          ),
        ),
        {
          headers: { authorization: token(tenant, '') },
        },
      ),
    status: (tenant, path, callId) => {
      const body = JSON.stringify({ uuid: callId, status: 'completed', duration: '4', direction: 'inbound' })
      return post(path, body, { 'content-type': 'application/json', authorization: token(tenant, body) })
    },
  }
}

function cloudonix(): CarrierCase {
  const key = (tenant: Tenant) => `XI-cloudonix-${tenant}`
  return {
    provider: 'cloudonix',
    statusPath: '/api/v1/telephony/cloudonix/cdr',
    config: (tenant) => ({
      provider: 'cloudonix',
      bearer_token: key(tenant),
      domain_id: `domain-${tenant}`,
      application_name: `voice-${tenant}`,
    }),
    offer: (tenant, to, callId) => {
      const form = formBody({ CallSid: callId, Session: callId, From: CALLER, To: to })
      return post('/api/v1/telephony/inbound/run', form.body, { ...form.headers, 'x-cx-apikey': key(tenant) })
    },
    status: (tenant, path, callId) =>
      post(path, JSON.stringify({ session: { token: callId }, disposition: 'ANSWER', billsec: 12 }), {
        'content-type': 'application/json',
        'x-cx-apikey': key(tenant),
      }),
  }
}

function exotel(): CarrierCase {
  const authorization = (tenant: Tenant) => basic(`exotel-key-${tenant}`, `exotel-token-${tenant}`)
  return {
    provider: 'exotel',
    statusPath: '/api/v1/telephony/exotel/status-callback',
    config: (tenant) => ({
      provider: 'exotel',
      account_sid: `exotel-sid-${tenant}`,
      api_key: `exotel-key-${tenant}`,
      api_token: `exotel-token-${tenant}`,
      from_numbers: [],
    }),
    offer: (tenant, to, callId) =>
      fetch(
        t.reach(
          url(
            `/api/v1/telephony/exotel/inbound?CallSid=${callId}&CallFrom=${encodeURIComponent(CALLER)}&CallTo=${encodeURIComponent(to)}`,
          ),
        ),
        {
          headers: { authorization: authorization(tenant) },
        },
      ),
    status: (tenant, path, callId) => {
      const form = formBody({ CallSid: callId, Status: 'completed', ConversationDuration: '4' })
      return post(path, form.body, { ...form.headers, authorization: authorization(tenant) })
    },
  }
}

const CARRIERS = [twilio(), nonceSigned('plivo'), nonceSigned('vobiz'), telnyx(), vonage(), cloudonix(), exotel()]

/** The media stream path of a run, in whatever markup, JSON or carrier command mentions it. */
const streamPathOf = (runId: number) => new RegExp(`/api/v1/telephony/ws/\\d+/\\d+/${runId}/`)

beforeAll(() => {
  t = createCarrierTestApp()
  carrierApi = startFakeServer(() => Response.json({ data: { result: 'ok' } }))
  for (const provider of Object.keys(t.ctx.providerApis) as (keyof typeof t.ctx.providerApis)[])
    t.ctx.providerApis[provider] = carrierApi.baseUrl
})
afterAll(() => {
  carrierApi.stop()
  t.stopServer()
  t.close()
})

/** Each tenant's configuration on the carrier, with its number answered by an inbound agent of its own. */
type Tenants = { organizationB: number; aNumber: string; bNumber: string }
const tenantsByProvider = new Map<string, Promise<Tenants>>()
const tenantsOn = (carrier: CarrierCase) => {
  if (!tenantsByProvider.has(carrier.provider)) tenantsByProvider.set(carrier.provider, createTenants(carrier))
  return tenantsByProvider.get(carrier.provider)!
}

async function createTenants(carrier: CarrierCase): Promise<Tenants> {
  // Numbers are unique within an organization, whatever the carrier.
  const aNumber = `+1415555${String(tenantsByProvider.size).padStart(2, '0')}01`
  const bNumber = `+1415555${String(tenantsByProvider.size).padStart(2, '0')}02`
  const other = t.newOrg(`other-${carrier.provider}`)
  const aAgent = await createCarrierAgent(t)
  const aConfig = await createConfiguration(t, `${carrier.provider} A`, carrier.config('a'))
  await addPhoneNumber(t, aConfig.id, { address: aNumber, inbound_workflow_id: aAgent.id })
  const bAgent = (
    await t.request('POST', '/api/v1/workflow/create/definition', {
      key: other.key,
      body: {
        name: 'B inbound',
        workflow_definition: {
          nodes: [{ id: '1', type: 'startCall', position: { x: 0, y: 0 }, data: { name: 'Start', prompt: 'Greet.' } }],
          edges: [],
        },
      },
    })
  ).body
  const bConfig = await createConfiguration(t, `${carrier.provider} B`, carrier.config('b'), { key: other.key })
  await addPhoneNumber(t, bConfig.id, { address: bNumber, inbound_workflow_id: bAgent.id }, other.key)
  return { organizationB: other.organizationId, aNumber, bNumber }
}

describe('a carrier callback resolves runs only within the configuration whose secret signed it', () => {
  for (const carrier of CARRIERS) {
    test(`${carrier.provider}: organization B, signing with its own secret, gets no stream of A's run and changes nothing of A's`, async () => {
      const { organizationB, aNumber, bNumber } = await tenantsOn(carrier)
      const aCall = `${carrier.provider}-call-of-a`
      const offered = await carrier.offer('a', aNumber, aCall)
      expect(offered.status, await offered.clone().text()).toBe(200)
      const aRun = latestRunId(t)
      expect(runRow(t, aRun)).toMatchObject({ call_type: 'inbound', state: 'initialized', provider_call_id: aCall })
      const stream = streamPathOf(aRun)
      const streamsOfA = () => carrierApi.requests.filter((request) => stream.test(JSON.stringify(request.body))).length
      const commandsOnA = () =>
        carrierApi.requests.filter((request) => decodeURIComponent(request.path).includes(aCall)).length
      const aCommands = streamsOfA()
      const aCallCommands = commandsOnA()
      const before = runRow(t, aRun)

      // B's number, B's signature, A's call id: the answer is B's refusal, never A's stream; no run starts.
      const forged = await carrier.offer('b', bNumber, aCall)
      expect(forged.status).toBe(200)
      expect(await forged.text()).not.toMatch(stream)
      expect(streamsOfA()).toBe(aCommands)
      expect(commandsOnA(), "no command to the carrier about A's call on B's behalf").toBe(aCallCommands)
      expect(latestRunId(t)).toBe(aRun)
      expect(
        t.ctx.sqlite.query('SELECT count(*) AS n FROM workflow_runs WHERE organization_id = ?').get(organizationB),
      ).toEqual({ n: 0 })

      // Status callbacks naming A's call (number-level URL) or A's run (in the URL), and A's answer and transfer URLs.
      const paths = [
        carrier.statusPath,
        `${carrier.statusPath}/${aRun}`,
        `/api/v1/telephony/${carrier.provider}/answer/${aRun}`,
        `/api/v1/telephony/${carrier.provider}/transfer/${aRun}`,
      ]
      for (const path of paths) {
        const response = await carrier.status('b', path, aCall)
        expect([403, 404], `${path}: ${response.status}`).toContain(response.status)
        expect(await response.text()).not.toMatch(stream)
      }
      expect(runRow(t, aRun)).toEqual(before)
      expect(streamsOfA()).toBe(aCommands)

      // A's own secret still settles A's run: the refusals above were about the signer, not a broken callback.
      expect((await carrier.status('a', carrier.statusPath, aCall)).status).toBe(200)
      expect(runRow(t, aRun).logs.telephony_status_callbacks).toHaveLength(1)
    })
  }

  test("a media stream opens only with its own run's token: B's token on A's run is refused (4401) and A's run does not start", async () => {
    const carrier = twilio()
    const { aNumber, bNumber } = await tenantsOn(carrier)
    await carrier.offer('a', aNumber, 'CA-stream-a')
    const aRun = latestRunId(t)
    const bAnswer = await (await carrier.offer('b', bNumber, 'CA-stream-b')).text()
    expect(latestRunId(t)).not.toBe(aRun)
    const bToken = /<Stream url="[^"]+\/([0-9a-f]+)"/.exec(bAnswer)![1]
    const aRow = t.ctx.sqlite
      .query<{ workflow_id: number; organization_id: number }, [number]>(
        'SELECT workflow_id, organization_id FROM workflow_runs WHERE id = ?',
      )
      .get(aRun)!
    const media = connectMedia(
      t.reach(
        `${PUBLIC_URL.replace('https', 'wss')}/api/v1/telephony/ws/${aRow.workflow_id}/${aRow.organization_id}/${aRun}/${bToken}`,
      ),
    )
    expect((await media.closed).code).toBe(4401)
    expect(runRow(t, aRun).state).toBe('initialized')
  })
})
