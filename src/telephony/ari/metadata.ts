import { Type as t } from '@sinclair/typebox'
import { type Loc, type ValidationItem, valueError } from '../../lib/validation'
import { isPlainObject } from '../../lib/values'
import type { Credentials } from '../../db/schema/telephony'
import { HTTP_URL_PATTERN, nullableString, providerTag, randomHex, type ProviderInfo } from '../provider-info'
import { type DestinationRules, validateDialStringTemplate } from '../../lib/phone'
import { MAX_NAME_LENGTH, MAX_SECRET_LENGTH, MAX_URL_LENGTH } from '../../lib/limits'

// Asterisk ARI: the configuration schema, form fields, server-managed defaults and setup checklist of this provider.

const DEFAULT_PBX_API_SOURCE = 'ringbase'

const VicidialAgentApiSchema = t.Object({
  url: t.String({
    minLength: 1,
    maxLength: MAX_URL_LENGTH,
    pattern: HTTP_URL_PATTERN,
    description: 'Full http(s) URL of the VICIdial agent API (agc/api.php).',
  }),
  username: t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: 'VICIdial agent API user.' }),
  password: t.String({
    minLength: 1,
    maxLength: MAX_SECRET_LENGTH,
    description: 'Password of the VICIdial agent API user.',
  }),
  source: t.Optional(
    t.String({
      default: DEFAULT_PBX_API_SOURCE,
      maxLength: MAX_NAME_LENGTH,
      description: 'Source tag sent with every agent API request.',
    }),
  ),
})

const VicidialNonAgentApiSchema = t.Object({
  url: t.Optional(
    t.Union([t.String({ maxLength: MAX_URL_LENGTH, pattern: '^(https?://\\S+)?$' }), t.Null()], {
      default: null,
      description: 'Full http(s) URL of the VICIdial non-agent API (non_agent_api.php). Empty disables it.',
    }),
  ),
  username: nullableString('VICIdial non-agent API user.'),
  password: nullableString('Password of the VICIdial non-agent API user.', MAX_SECRET_LENGTH),
  source: t.Optional(
    t.String({
      default: DEFAULT_PBX_API_SOURCE,
      maxLength: MAX_NAME_LENGTH,
      description: 'Source tag sent with every non-agent API request.',
    }),
  ),
})

const ExternalPbxSchema = t.Object({
  type: t.Optional(t.Literal('vicidial', { default: 'vicidial', description: 'Kind of external PBX adapter.' })),
  agent_api: VicidialAgentApiSchema,
  non_agent_api: t.Optional(
    t.Union([VicidialNonAgentApiSchema, t.Null()], {
      default: null,
      description: 'Optional API used for lead updates.',
    }),
  ),
  timeout_seconds: t.Optional(
    t.Integer({ minimum: 1, maximum: 30, default: 8, description: 'Timeout of each request to the PBX, in seconds.' }),
  ),
})

export const AriConfigSchema = t.Object({
  provider: providerTag('ari'),
  ari_endpoint: t.String({
    maxLength: MAX_URL_LENGTH,
    pattern: HTTP_URL_PATTERN,
    description: 'ARI base URL without /ari, e.g. http://pbx.example.com:8088.',
  }),
  app_name: t.String({ maxLength: MAX_NAME_LENGTH, description: 'ARI username (the section name in ari.conf).' }),
  app_password: t.String({ maxLength: MAX_SECRET_LENGTH, description: 'ARI password.' }),
  ws_client_name: t.Optional(
    t.String({
      default: '',
      maxLength: MAX_NAME_LENGTH,
      description:
        "Not used: stored and shown only. Ringbase connects to each call's media WebSocket on Asterisk's HTTP server " +
        'itself (chan_websocket in server mode), so websocket_client.conf needs no entry.',
    }),
  ),
  dial_string_template: t.Optional(
    t.String({
      default: 'PJSIP/{number}',
      maxLength: MAX_NAME_LENGTH,
      pattern: '\\{number\\}',
      description: 'How a destination is dialled; {number} is replaced by it.',
    }),
  ),
  allow_raw_dial_strings: t.Optional(
    t.Boolean({
      default: false,
      description:
        'Dial a destination that names a channel technology (PJSIP/, SIP/, IAX2/, Local/, DAHDI/) as written, ' +
        'bypassing dial_string_template. Off: anyone with a trigger key could reach any dialplan context or trunk.',
    }),
  ),
  external_pbx: t.Optional(
    t.Union([ExternalPbxSchema, t.Null()], {
      default: null,
      description: 'External PBX reached through this Asterisk.',
    }),
  ),
})

const EXTERNAL_PBX_SECTION = 'External PBX'

/** What destinations a stored ARI configuration accepts (older configurations, without the flag, take no raw dial strings). */
export const ariDestinationRules = (credentials: Credentials): DestinationRules => ({
  rawDialStrings: credentials.allow_raw_dial_strings === true,
})

export const ari: ProviderInfo = {
  name: 'ari',
  displayName: 'Asterisk ARI',
  connectivity: 'sip',
  schema: AriConfigSchema,
  fields: [
    {
      name: 'ari_endpoint',
      label: 'ARI URL',
      type: 'text',
      destination: true,
      placeholder: 'http://pbx.example.com:8088',
    },
    { name: 'app_name', label: 'ARI Username', type: 'text' },
    { name: 'app_password', label: 'ARI Password', type: 'password', sensitive: true },
    { name: 'ws_client_name', label: 'WebSocket Client Name (not used)', type: 'text' },
    { name: 'dial_string_template', label: 'Dial String Template', type: 'text', placeholder: 'PJSIP/{number}' },
    { name: 'allow_raw_dial_strings', label: 'Allow Raw Dial Strings', type: 'boolean' },
    {
      name: 'stasis_app_name',
      label: 'Stasis Application',
      type: 'readonly',
      description: 'Assigned by the server on create. Route calls to it in the dialplan with Stasis(<name>).',
    },
    {
      name: 'external_pbx.type',
      label: 'PBX Type',
      type: 'select',
      section: EXTERNAL_PBX_SECTION,
      options: [{ value: 'vicidial', label: 'VICIdial' }],
    },
    {
      name: 'external_pbx.agent_api.url',
      label: 'Agent API URL',
      type: 'text',
      destination: true,
      section: EXTERNAL_PBX_SECTION,
      placeholder: 'https://dialer.example.com/agc/api.php',
    },
    {
      name: 'external_pbx.agent_api.username',
      label: 'Agent API Username',
      type: 'text',
      sensitive: true,
      section: EXTERNAL_PBX_SECTION,
    },
    {
      name: 'external_pbx.agent_api.password',
      label: 'Agent API Password',
      type: 'password',
      sensitive: true,
      section: EXTERNAL_PBX_SECTION,
    },
    { name: 'external_pbx.agent_api.source', label: 'Agent API Source', type: 'text', section: EXTERNAL_PBX_SECTION },
    {
      name: 'external_pbx.non_agent_api.url',
      label: 'Non-Agent API URL',
      type: 'text',
      destination: true,
      section: EXTERNAL_PBX_SECTION,
      placeholder: 'https://dialer.example.com/vicidial/non_agent_api.php',
    },
    {
      name: 'external_pbx.non_agent_api.username',
      label: 'Non-Agent API Username',
      type: 'text',
      sensitive: true,
      section: EXTERNAL_PBX_SECTION,
    },
    {
      name: 'external_pbx.non_agent_api.password',
      label: 'Non-Agent API Password',
      type: 'password',
      sensitive: true,
      section: EXTERNAL_PBX_SECTION,
    },
    {
      name: 'external_pbx.non_agent_api.source',
      label: 'Non-Agent API Source',
      type: 'text',
      section: EXTERNAL_PBX_SECTION,
    },
    {
      name: 'external_pbx.timeout_seconds',
      label: 'Request Timeout (seconds)',
      type: 'number',
      section: EXTERNAL_PBX_SECTION,
    },
  ],
  // A Stasis app is delivered only to the websocket that registered it last, so each configuration gets its own name.
  serverManaged: [{ name: 'stasis_app_name', shownInResponse: true, mint: () => `ringbase_${randomHex(6)}` }],
  supportsTrunks: false,
  supportsOutbound: true,
  supportsCallTransfer: true,
  supportsPhoneNumberSync: false,
  requiresCallerId: false,
  // An empty non-agent API URL means there is none.
  normaliseCredentials(credentials) {
    if (!isPlainObject(credentials.external_pbx)) return credentials
    const nonAgentApi = credentials.external_pbx.non_agent_api
    if (isPlainObject(nonAgentApi) && !nonAgentApi.url) {
      return { ...credentials, external_pbx: { ...credentials.external_pbx, non_agent_api: null } }
    }
    return credentials
  },
  crossFieldItems(config, loc) {
    return [...dialStringTemplateItems(config, loc), ...nonAgentApiItems(config, loc)]
  },
}

// The schema's pattern only asks for {number}: what Asterisk would read as a separator (`,` options, `&` a second
// channel) or a missing channel technology is refused here, next to the field.
function dialStringTemplateItems(config: Record<string, unknown>, loc: Loc): ValidationItem[] {
  const template = config.dial_string_template
  if (typeof template !== 'string') return []
  const problem = validateDialStringTemplate(template)
  return problem
    ? [valueError([...loc, 'ari', 'dial_string_template'], `dial_string_template ${problem}`, template)]
    : []
}

function nonAgentApiItems(config: Record<string, unknown>, loc: Loc): ValidationItem[] {
  if (!isPlainObject(config.external_pbx)) return []
  const nonAgentApi = config.external_pbx.non_agent_api
  if (!isPlainObject(nonAgentApi) || !nonAgentApi.url) return []
  if (nonAgentApi.username && nonAgentApi.password) return []
  return [
    valueError(
      [...loc, 'ari', 'external_pbx', 'non_agent_api'],
      'non_agent_api needs url, username and password together',
      nonAgentApi,
    ),
  ]
}
