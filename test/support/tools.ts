import type { HttpApiConfig } from '../../src/tools/schemas'

/** A stored http_api config: every default the API fills in, then `overrides`. */
export const httpApiConfig = (overrides: Partial<HttpApiConfig> & Pick<HttpApiConfig, 'url'>): HttpApiConfig => ({
  method: 'GET',
  headers: {},
  credential_uuid: null,
  parameters: [],
  preset_parameters: [],
  timeout_ms: 5000,
  body_template: null,
  customMessage: null,
  customMessageType: null,
  customMessageRecordingId: null,
  ...overrides,
})
