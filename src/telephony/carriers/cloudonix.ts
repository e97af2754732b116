import type { AppContext } from '../../context'
import { isPlainObject } from '../../lib/values'
import { bearer, callCarrier, callCarrierForJson, requireId } from './http'
import {
  sameText,
  xmlAnswer,
  type CarrierCallStatus,
  type Carrier,
  type InboundCallStart,
  type StatusUpdate,
  type WebhookRequest,
} from './carrier'
import type { Credentials } from '../../db/schema/telephony'
import { connectTwiml } from './twilio'
import { Type as t } from '@sinclair/typebox'
import {
  callerIdStep,
  nullableString,
  providerTag,
  type ProviderInfo,
  type SetupFacts,
  type SetupStep,
} from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH } from '../../lib/limits'

// Cloudonix: calls placed through the domain's application API with inline CXML (Twilio's dialect, so the same
// <Connect><Stream> and Media Streams framing), outcomes from the domain's CDR webhook, matched by session token.
// Its webhooks carry no signature: the `x-cx-apikey` header must equal the configuration's bearer token.

export const CloudonixConfigSchema = t.Object({
  provider: providerTag('cloudonix'),
  bearer_token: t.String({ maxLength: MAX_SECRET_LENGTH, description: 'API bearer token.' }),
  domain_id: t.String({
    maxLength: MAX_NAME_LENGTH,
    description: 'Domain name; a bare name gets .cloudonix.net appended.',
  }),
  application_name: nullableString(
    'Voice application name. When omitted, one is created on save and its name is stored.',
  ),
})

/** Trimmed, lowercased, without a trailing dot; a bare name is a subdomain of the provider's own domain. */
function normaliseCloudonixDomain(domain: string): string {
  const cleaned = domain.trim().replace(/\.+$/, '').toLowerCase()
  return cleaned === '' || cleaned.includes('.') ? cleaned : `${cleaned}.cloudonix.net`
}

function cloudonixSteps(facts: SetupFacts): SetupStep[] {
  const enabledTrunks = facts.enabledTrunkCount ?? 0
  const steps: SetupStep[] = [
    {
      key: 'outbound_trunk',
      title: 'Add an outbound trunk',
      description:
        'Add an enabled trunk to choose the region calls leave through; without one the domain default is used.',
      complete: enabledTrunks > 0,
      blocks_outbound: false,
    },
    callerIdStep('Cloudonix', facts.activeNumberCount),
  ]
  if (enabledTrunks > 1) {
    steps.push({
      key: 'trunk_assignment',
      title: 'Assign numbers to trunks',
      description: 'With more than one trunk, pick the trunk of each active number.',
      complete: (facts.activeNumbersWithoutTrunkCount ?? 0) === 0,
      blocks_outbound: false,
    })
  }
  steps.push({
    key: 'inbound_routing',
    title: 'Route inbound calls to an agent',
    description: 'Attach an agent to at least one active number to answer calls to it.',
    complete: (facts.activeNumbersWithInboundAgentCount ?? 0) > 0,
    blocks_outbound: false,
  })
  return steps
}

export const cloudonix: ProviderInfo = {
  name: 'cloudonix',
  displayName: 'Cloudonix',
  connectivity: 'sip',
  schema: CloudonixConfigSchema,
  fields: [
    { name: 'bearer_token', label: 'Bearer Token', type: 'password', sensitive: true },
    { name: 'domain_id', label: 'Domain', type: 'text', placeholder: 'example.cloudonix.net' },
    {
      name: 'application_name',
      label: 'Voice Application Name',
      type: 'text',
      placeholder: 'Created on save when empty',
    },
  ],
  serverManaged: [
    { name: 'domain_uuid', shownInResponse: false },
    { name: 'application_id', shownInResponse: false },
    { name: 'application_uuid', shownInResponse: false },
  ],
  supportsTrunks: true,
  supportsOutbound: true,
  // Its API has no documented way to redirect a live call to new CXML.
  supportsCallTransfer: false,
  supportsPhoneNumberSync: true,
  requiresCallerId: true,
  normaliseCredentials: (credentials) =>
    typeof credentials.domain_id === 'string'
      ? { ...credentials, domain_id: normaliseCloudonixDomain(credentials.domain_id) }
      : credentials,
  setupSteps: cloudonixSteps,
}

const DISPOSITIONS: Record<string, CarrierCallStatus> = {
  ANSWER: 'completed',
  ANSWERED: 'completed',
  BUSY: 'busy',
  CANCEL: 'canceled',
  NOANSWER: 'no-answer',
  'NO ANSWER': 'no-answer',
  FAILED: 'failed',
  CONGESTION: 'failed',
}

const domainOf = (credentials: Credentials) => encodeURIComponent(String(credentials.domain_id))
const sessionPath = (credentials: Credentials, token: string) =>
  `/customers/self/domains/${domainOf(credentials)}/sessions/${encodeURIComponent(token)}`

const request = (ctx: AppContext, credentials: Credentials) => ({
  provider: 'cloudonix' as const,
  displayName: cloudonix.displayName,
  baseUrl: ctx.providerApis.cloudonix,
  headers: { authorization: bearer(credentials.bearer_token) },
  secrets: [credentials.bearer_token],
})

/** A CDR: the session token and its disposition (ANSWER, BUSY, CANCEL, NOANSWER, FAILED, CONGESTION), billsec the talk time. */
function parseCdr(webhook: WebhookRequest): StatusUpdate | null {
  const cdr = webhook.json
  const session = isPlainObject(cdr?.session) ? cdr.session : null
  const token = session?.token ?? cdr?.token
  if (typeof token !== 'string') return null
  const disposition = String(cdr?.disposition ?? '').toUpperCase()
  const talkSeconds = Number(cdr?.billsec ?? cdr?.billSec)
  return {
    status: DISPOSITIONS[disposition] ?? null,
    providerStatus: disposition || 'unknown',
    providerCallId: token,
    ...(Number.isFinite(talkSeconds) ? { durationSeconds: talkSeconds } : {}),
  }
}

export const cloudonixCarrier: Carrier = {
  provider: 'cloudonix',
  mediaFraming: 'twilio',
  reportsInboundCalls: true,
  callbackPaths: ['cdr'],
  async dial(ctx, dial, links) {
    const action = 'place the call'
    const answer = await callCarrierForJson(ctx, {
      ...request(ctx, dial.credentials),
      action,
      method: 'POST',
      path: `/calls/${domainOf(dial.credentials)}/application`,
      json: {
        destination: dial.destination,
        'caller-id': dial.callerId,
        timeout: dial.ringTimeoutSeconds,
        cxml: connectTwiml(links.mediaStreamUrl).body,
      },
    })
    return requireId(cloudonix.displayName, action, answer.token)
  },
  async hangup(ctx, credentials, token) {
    await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'hang up the call',
      method: 'DELETE',
      path: sessionPath(credentials, token),
      idempotent: true,
      accept: [404],
    })
  },
  async callState(ctx, credentials, token) {
    const { status, payload } = await callCarrier(ctx, {
      ...request(ctx, credentials),
      action: 'look up the call',
      method: 'GET',
      path: sessionPath(credentials, token),
      idempotent: true,
      accept: [404],
    })
    return status === 404 || payload?.status === 'ended' ? 'gone' : 'alive'
  },
  verify(webhook, credentials) {
    const key = webhook.headers.get('x-cx-apikey')
    if (!key) return 'unsigned'
    return sameText(key, String(credentials.bearer_token)) ? 'valid' : 'invalid'
  },
  parseStatus: parseCdr,
  connect: (links) => connectTwiml(links.mediaStreamUrl),
  refuse: () => xmlAnswer('<Response><Hangup/></Response>'),
  parseInbound(webhook): InboundCallStart | null {
    const { Session: session, CallSid: callSid, From: from, To: to } = webhook.params
    const id = session || callSid
    return id && to ? { providerCallId: id, from: from ?? '', to } : null
  },
}
