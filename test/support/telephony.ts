import { expect } from 'bun:test'
import type { ProviderName } from '../../src/telephony/config/providers'
import type { HttpClient } from './http-app'

export const CONFIGS_PATH = '/api/v1/organizations/telephony-configs'

/**
 * One valid create `config` per provider, carrying any provider-side ids so that saving calls no provider.
 * `secrets` are the sensitive values in it: they must never appear in clear outside the process.
 */
export const VALID_CONFIGS: Record<ProviderName, { config: Record<string, unknown>; secrets: string[] }> = {
  ari: {
    config: {
      provider: 'ari',
      ari_endpoint: 'http://pbx.example.com:8088',
      app_name: 'ringbase',
      app_password: 'S3cr3t-ari-password-01',
      external_pbx: {
        agent_api: {
          url: 'https://dialer.example.com/agc/api.php',
          username: 'S3cr3t-vici-agent-user',
          password: 'S3cr3t-vici-agent-pass',
        },
        non_agent_api: {
          url: 'https://dialer.example.com/vicidial/non_agent_api.php',
          username: 'S3cr3t-vici-api-user',
          password: 'S3cr3t-vici-api-pass',
        },
      },
    },
    secrets: [
      'S3cr3t-ari-password-01',
      'S3cr3t-vici-agent-user',
      'S3cr3t-vici-agent-pass',
      'S3cr3t-vici-api-user',
      'S3cr3t-vici-api-pass',
    ],
  },
  cloudonix: {
    config: {
      provider: 'cloudonix',
      bearer_token: 'S3cr3t-cloudonix-bearer',
      domain_id: 'Acme',
      application_name: 'acme-voice',
    },
    secrets: ['S3cr3t-cloudonix-bearer'],
  },
  exotel: {
    config: {
      provider: 'exotel',
      account_sid: 'S3cr3t-exotel-sid',
      api_key: 'S3cr3t-exotel-key',
      api_token: 'S3cr3t-exotel-token',
      from_numbers: ['+919876543210'],
    },
    secrets: ['S3cr3t-exotel-sid', 'S3cr3t-exotel-key', 'S3cr3t-exotel-token'],
  },
  plivo: {
    config: {
      provider: 'plivo',
      auth_id: 'S3cr3t-plivo-auth-id',
      auth_token: 'S3cr3t-plivo-auth-token',
      application_id: 'plivo-app-existing',
    },
    secrets: ['S3cr3t-plivo-auth-id', 'S3cr3t-plivo-auth-token'],
  },
  telnyx: {
    config: { provider: 'telnyx', api_key: 'S3cr3t-telnyx-api-key', connection_id: 'telnyx-conn-existing' },
    secrets: ['S3cr3t-telnyx-api-key'],
  },
  twilio: {
    config: { provider: 'twilio', account_sid: 'S3cr3t-twilio-sid', auth_token: 'S3cr3t-twilio-token' },
    secrets: ['S3cr3t-twilio-sid', 'S3cr3t-twilio-token'],
  },
  vobiz: {
    config: {
      provider: 'vobiz',
      auth_id: 'S3cr3t-vobiz-auth-id',
      auth_token: 'S3cr3t-vobiz-auth-token',
      application_id: 'vobiz-app-existing',
    },
    secrets: ['S3cr3t-vobiz-auth-id', 'S3cr3t-vobiz-auth-token'],
  },
  vonage: {
    config: {
      provider: 'vonage',
      api_key: 'S3cr3t-vonage-key',
      api_secret: 'S3cr3t-vonage-secret',
      application_id: 'vonage-app',
      private_key: '-----BEGIN PRIVATE KEY-----\nS3cr3t-vonage-private\n-----END PRIVATE KEY-----',
      signature_secret: 'S3cr3t-vonage-signature',
    },
    secrets: ['S3cr3t-vonage-key', 'S3cr3t-vonage-secret', 'S3cr3t-vonage-private', 'S3cr3t-vonage-signature'],
  },
  whatsapp: {
    config: {
      provider: 'whatsapp',
      access_token: 'S3cr3t-wa-access-token',
      waba_id: 'waba-1',
      app_secret: 'S3cr3t-wa-app-secret',
    },
    secrets: ['S3cr3t-wa-access-token', 'S3cr3t-wa-app-secret'],
  },
}

/** Creates a configuration over HTTP and returns its detail; fails the test unless the answer is 200. */
export async function createConfiguration(
  t: HttpClient,
  name: string,
  config: Record<string, unknown>,
  options: { key?: string; isDefaultOutbound?: boolean } = {},
): Promise<any> {
  const response = await t.request('POST', CONFIGS_PATH, {
    key: options.key,
    body: { name, config, is_default_outbound: options.isDefaultOutbound ?? false },
  })
  expect(response.status, response.text).toBe(200)
  return response.body
}

/** Adds a phone number to a configuration over HTTP and returns it. */
export async function addPhoneNumber(
  t: HttpClient,
  configurationId: number,
  body: Record<string, unknown>,
  key?: string,
): Promise<any> {
  const response = await t.request('POST', `${CONFIGS_PATH}/${configurationId}/phone-numbers`, { key, body })
  expect(response.status, response.text).toBe(200)
  return response.body
}
