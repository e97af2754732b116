import { Type as t } from '@sinclair/typebox'
import {
  callerIdStep,
  nullableString,
  providerTag,
  type ProviderInfo,
  type SetupFacts,
  type SetupStep,
} from '../provider-info'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH } from '../../../lib/limits'

// Cloudonix: the configuration schema, form fields, server-managed defaults and setup checklist of this provider.

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
    complete: (facts.activeNumbersWithInboundWorkflowCount ?? 0) > 0,
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
