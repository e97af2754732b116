/**
 * Names in the OpenAPI document, so that a client generated from it has the method and type names of one generated
 * from the reference platform's document. Keyed by `METHOD /path` as the document writes the path.
 *
 * `name` is the operation's name (its id is built from it, the path and the method: see `operationId`); `request` and
 * `response` name the request body and the success response (for a response that is an array, its items); `errors`
 * names error bodies that differ from the shared ones. Operations the reference has are listed even before we serve
 * them, so they get its names the day they are added; ours follow its style.
 */
export type OperationNames = {
  name: string
  request?: string
  response?: string
  errors?: Record<string, string>
}

const TRIGGER_CALL = { request: 'TriggerCallRequest', response: 'TriggerCallResponse' }
const WORKFLOW_ERRORS = { 409: 'WorkflowDefinitionError', 422: 'WorkflowValidationError' }

export const OPERATION_NAMES: Record<string, OperationNames> = {
  'GET /api/v1/health': { name: 'health', response: 'HealthResponse' },
  'GET /api/v1/health/active-calls': { name: 'active_calls', response: 'ActiveCallsResponse' },

  'GET /api/v1/user/api-keys': { name: 'get_api_keys', response: 'APIKeyResponse' },
  'POST /api/v1/user/api-keys': {
    name: 'create_api_key',
    request: 'CreateAPIKeyRequest',
    response: 'CreateAPIKeyResponse',
  },
  'DELETE /api/v1/user/api-keys/{api_key_id}': { name: 'archive_api_key', response: 'APIKeyStatusResponse' },
  'PUT /api/v1/user/api-keys/{api_key_id}/reactivate': { name: 'reactivate_api_key', response: 'APIKeyStatusResponse' },

  'POST /api/v1/workflow/create/definition': {
    name: 'create_workflow',
    request: 'CreateWorkflowRequest',
    response: 'WorkflowResponse',
    errors: WORKFLOW_ERRORS,
  },
  'GET /api/v1/workflow/count': { name: 'get_workflow_count', response: 'WorkflowCountResponse' },
  'GET /api/v1/workflow/fetch': { name: 'get_workflows', response: 'WorkflowListResponse' },
  'GET /api/v1/workflow/fetch/{workflow_id}': { name: 'get_workflow', response: 'WorkflowResponse' },
  'PUT /api/v1/workflow/{workflow_id}': {
    name: 'update_workflow',
    request: 'UpdateWorkflowRequest',
    response: 'WorkflowResponse',
    errors: WORKFLOW_ERRORS,
  },
  'POST /api/v1/workflow/{workflow_id}/publish': { name: 'publish_workflow', response: 'WorkflowResponse' },
  'GET /api/v1/workflow/{workflow_id}/versions': { name: 'get_workflow_versions', response: 'WorkflowVersionResponse' },
  'PUT /api/v1/workflow/{workflow_id}/status': {
    name: 'update_workflow_status',
    request: 'UpdateWorkflowStatusRequest',
    response: 'WorkflowResponse',
  },
  'POST /api/v1/workflow/{workflow_id}/runs': {
    name: 'create_workflow_run',
    request: 'CreateWorkflowRunRequest',
    response: 'CreateWorkflowRunResponse',
  },
  'GET /api/v1/workflow/{workflow_id}/runs': { name: 'get_workflow_runs', response: 'WorkflowRunsResponse' },
  'GET /api/v1/workflow/{workflow_id}/runs/{run_id}': {
    name: 'get_workflow_run',
    response: 'WorkflowRunResponseSchema',
  },

  'GET /api/v1/node-types': { name: 'list_node_types', response: 'NodeTypesResponse' },
  'GET /api/v1/node-types/{name}': { name: 'get_node_type', response: 'NodeSpec' },

  'GET /api/v1/public/download/workflow/{token}/{artifact_type}': {
    name: 'download_workflow_artifact',
    response: 'WorkflowArtifactFile',
  },
  'POST /api/v1/public/agent/{uuid}': { name: 'initiate_call', ...TRIGGER_CALL },
  'POST /api/v1/public/agent/test/{uuid}': { name: 'initiate_call_test', ...TRIGGER_CALL },
  'POST /api/v1/public/agent/workflow/{workflow_uuid}': { name: 'initiate_call_by_workflow_uuid', ...TRIGGER_CALL },
  'POST /api/v1/public/agent/test/workflow/{workflow_uuid}': {
    name: 'initiate_call_test_by_workflow_uuid',
    ...TRIGGER_CALL,
  },

  'GET /api/v1/organizations/usage/runs': { name: 'get_usage_history', response: 'UsageHistoryResponse' },
  'GET /api/v1/organizations/disposition-codes': {
    name: 'get_disposition_codes',
    response: 'DispositionCodesResponse',
  },
  'GET /api/v1/organizations/campaign-defaults': {
    name: 'get_campaign_defaults',
    response: 'CampaignDefaultsResponse',
  },

  'GET /api/v1/organizations/telephony-providers/metadata': {
    name: 'get_telephony_providers_metadata',
    response: 'TelephonyProvidersMetadataResponse',
  },
  'GET /api/v1/organizations/telephony-configs': {
    name: 'list_telephony_configurations',
    response: 'TelephonyConfigurationListResponse',
  },
  'POST /api/v1/organizations/telephony-configs': {
    name: 'create_telephony_configuration',
    request: 'TelephonyConfigurationCreateRequest',
    response: 'TelephonyConfigurationDetail',
  },
  'GET /api/v1/organizations/telephony-configs/{config_id}': {
    name: 'get_telephony_configuration_by_id',
    response: 'TelephonyConfigurationDetail',
  },
  'PUT /api/v1/organizations/telephony-configs/{config_id}': {
    name: 'update_telephony_configuration',
    request: 'TelephonyConfigurationUpdateRequest',
    response: 'TelephonyConfigurationDetail',
  },
  'DELETE /api/v1/organizations/telephony-configs/{config_id}': {
    name: 'delete_telephony_configuration',
    response: 'DeleteTelephonyConfigurationResponse',
  },
  'POST /api/v1/organizations/telephony-configs/{config_id}/set-default-outbound': {
    name: 'set_default_outbound',
    response: 'TelephonyConfigurationDetail',
  },
  'POST /api/v1/organizations/telephony-configs/{config_id}/reactivate': {
    name: 'reactivate_telephony_configuration',
    response: 'TelephonyConfigurationDetail',
  },
  'GET /api/v1/organizations/telephony-configs/{config_id}/trunks': {
    name: 'list_telephony_trunks',
    response: 'TrunkListResponse',
  },
  'POST /api/v1/organizations/telephony-configs/{config_id}/trunks': {
    name: 'create_telephony_trunk',
    request: 'TrunkCreateRequest',
    response: 'TrunkResponse',
  },
  'PUT /api/v1/organizations/telephony-configs/{config_id}/trunks/{trunk_id}': {
    name: 'update_telephony_trunk',
    request: 'TrunkUpdateRequest',
    response: 'TrunkResponse',
  },
  'DELETE /api/v1/organizations/telephony-configs/{config_id}/trunks/{trunk_id}': {
    name: 'delete_telephony_trunk',
    response: 'DeleteTelephonyTrunkResponse',
  },
  'GET /api/v1/organizations/telephony-configs/{config_id}/phone-numbers': {
    name: 'list_phone_numbers',
    response: 'PhoneNumberListResponse',
  },
  'POST /api/v1/organizations/telephony-configs/{config_id}/phone-numbers': {
    name: 'create_phone_number',
    request: 'PhoneNumberCreateRequest',
    response: 'PhoneNumberResponse',
  },
  'GET /api/v1/organizations/telephony-configs/{config_id}/phone-numbers/{phone_number_id}': {
    name: 'get_phone_number',
    response: 'PhoneNumberResponse',
  },
  'PUT /api/v1/organizations/telephony-configs/{config_id}/phone-numbers/{phone_number_id}': {
    name: 'update_phone_number',
    request: 'PhoneNumberUpdateRequest',
    response: 'PhoneNumberResponse',
  },
  'DELETE /api/v1/organizations/telephony-configs/{config_id}/phone-numbers/{phone_number_id}': {
    name: 'delete_phone_number',
    response: 'DeletePhoneNumberResponse',
  },
  'POST /api/v1/organizations/telephony-configs/{config_id}/phone-numbers/{phone_number_id}/set-default-caller': {
    name: 'set_default_caller_id',
    response: 'PhoneNumberResponse',
  },

  'GET /api/v1/organizations/provider-connections': {
    name: 'list_provider_connections',
    response: 'ProviderConnectionListResponse',
  },
  'POST /api/v1/organizations/provider-connections': {
    name: 'create_provider_connection',
    request: 'ProviderConnectionCreateRequest',
    response: 'ProviderConnectionResponse',
  },
  'GET /api/v1/organizations/provider-connections/{uuid}': {
    name: 'get_provider_connection',
    response: 'ProviderConnectionResponse',
  },
  'PUT /api/v1/organizations/provider-connections/{uuid}': {
    name: 'update_provider_connection',
    request: 'ProviderConnectionUpdateRequest',
    response: 'ProviderConnectionResponse',
  },
  'DELETE /api/v1/organizations/provider-connections/{uuid}': {
    name: 'delete_provider_connection',
    response: 'DeleteProviderConnectionResponse',
  },
  'POST /api/v1/organizations/provider-connections/{uuid}/check': {
    name: 'check_provider_connection',
    response: 'ProviderConnectionCheckResponse',
  },
  'GET /api/v1/organizations/model-configurations': {
    name: 'list_model_configurations',
    response: 'ModelConfigurationListResponse',
  },
  'POST /api/v1/organizations/model-configurations': {
    name: 'create_model_configuration',
    request: 'ModelConfigurationCreateRequest',
    response: 'ModelConfigurationResponse',
  },
  'GET /api/v1/organizations/model-configurations/{uuid}': {
    name: 'get_model_configuration',
    response: 'ModelConfigurationResponse',
  },
  'PUT /api/v1/organizations/model-configurations/{uuid}': {
    name: 'update_model_configuration',
    request: 'ModelConfigurationUpdateRequest',
    response: 'ModelConfigurationResponse',
  },
  'DELETE /api/v1/organizations/model-configurations/{uuid}': {
    name: 'delete_model_configuration',
    response: 'DeleteModelConfigurationResponse',
  },
  'GET /api/v1/organizations/price-card': { name: 'get_price_card', response: 'PriceCardResponse' },
  'PUT /api/v1/organizations/price-card': {
    name: 'update_price_card',
    request: 'PriceCardRequest',
    response: 'PriceCardResponse',
  },
  'DELETE /api/v1/organizations/price-card': { name: 'delete_price_card', response: 'PriceCardResponse' },

  'POST /api/v1/workflow/{workflow_id}/web-calls': {
    name: 'start_web_call',
    request: 'StartWebCallRequest',
    response: 'StartWebCallResponse',
  },
  'POST /api/v1/workflow/{workflow_id}/text-chat/sessions': {
    name: 'create_text_chat_session',
    request: 'CreateTextChatSessionRequest',
    response: 'TextChatSessionResponse',
  },
  'GET /api/v1/workflow/{workflow_id}/text-chat/sessions/{run_id}': {
    name: 'get_text_chat_session',
    response: 'TextChatSessionResponse',
  },
  'POST /api/v1/workflow/{workflow_id}/text-chat/sessions/{run_id}/messages': {
    name: 'send_text_chat_message',
    request: 'TextChatMessageRequest',
    response: 'TextChatSessionResponse',
    errors: { 409: 'TextChatRevisionConflict' },
  },
  'POST /api/v1/workflow/{workflow_id}/text-chat/sessions/{run_id}/end': {
    name: 'end_text_chat_session',
    response: 'TextChatSessionResponse',
  },
  'GET /api/v1/organizations/webhook-signing-secret': {
    name: 'get_webhook_signing_secret',
    response: 'WebhookSigningSecretStatusResponse',
  },
  'POST /api/v1/organizations/webhook-signing-secret': {
    name: 'create_webhook_signing_secret',
    response: 'WebhookSigningSecretResponse',
  },

  'GET /api/v1/credentials': { name: 'list_credentials', response: 'CredentialResponse' },
  'POST /api/v1/credentials': {
    name: 'create_credential',
    request: 'CreateCredentialRequest',
    response: 'CredentialResponse',
  },
  'GET /api/v1/credentials/{credential_uuid}': { name: 'get_credential', response: 'CredentialResponse' },
  'PUT /api/v1/credentials/{credential_uuid}': {
    name: 'update_credential',
    request: 'UpdateCredentialRequest',
    response: 'CredentialResponse',
  },
  'DELETE /api/v1/credentials/{credential_uuid}': { name: 'delete_credential', response: 'DeleteCredentialResponse' },

  'POST /api/v1/telephony/inbound/run': { name: 'handle_inbound_call' },
  'GET /api/v1/telephony/inbound/run': { name: 'handle_inbound_call' },
  'POST /api/v1/telephony/{provider}/inbound': { name: 'handle_provider_inbound_call' },
  'GET /api/v1/telephony/{provider}/inbound': { name: 'handle_provider_inbound_call' },
  'POST /api/v1/telephony/{provider}/answer/{run_id}': { name: 'handle_answer_webhook' },
  'GET /api/v1/telephony/{provider}/answer/{run_id}': { name: 'handle_answer_webhook' },
  'POST /api/v1/telephony/{provider}/{callback}/{run_id}': { name: 'handle_status_callback' },
  'POST /api/v1/telephony/{provider}/{callback}': { name: 'handle_provider_webhook' },
  'GET /api/v1/telephony/{provider}/{callback}': { name: 'verify_provider_webhook' },

  'GET /api/v1/s3/signed-url': { name: 'get_signed_url', response: 'S3SignedUrlResponse' },
  'POST /api/v1/s3/presigned-upload-url': {
    name: 'get_presigned_upload_url',
    request: 'PresignedUploadUrlRequest',
    response: 'PresignedUploadUrlResponse',
  },
  'PUT /api/v1/s3/upload': { name: 'upload_object', response: 'S3UploadResponse' },
  'GET /api/v1/s3/download': { name: 'download_object', response: 'S3ObjectFile' },

  'POST /api/v1/campaign/create': {
    name: 'create_campaign',
    request: 'CreateCampaignRequest',
    response: 'CampaignResponse',
  },
  'GET /api/v1/campaign/': { name: 'get_campaigns', response: 'CampaignsResponse' },
  'GET /api/v1/campaign/{campaign_id}': { name: 'get_campaign', response: 'CampaignResponse' },
  'PATCH /api/v1/campaign/{campaign_id}': {
    name: 'update_campaign',
    request: 'UpdateCampaignRequest',
    response: 'CampaignResponse',
  },
  'POST /api/v1/campaign/{campaign_id}/start': { name: 'start_campaign', response: 'CampaignResponse' },
  'POST /api/v1/campaign/{campaign_id}/pause': { name: 'pause_campaign', response: 'CampaignResponse' },
  'POST /api/v1/campaign/{campaign_id}/resume': { name: 'resume_campaign', response: 'CampaignResponse' },
  'POST /api/v1/campaign/{campaign_id}/stop': { name: 'stop_campaign', response: 'CampaignResponse' },
  'POST /api/v1/campaign/{campaign_id}/redial': {
    name: 'redial_campaign',
    request: 'RedialCampaignRequest',
    response: 'CampaignResponse',
  },
  'GET /api/v1/campaign/{campaign_id}/runs': { name: 'get_campaign_runs', response: 'CampaignRunsResponse' },
  'GET /api/v1/campaign/{campaign_id}/progress': {
    name: 'get_campaign_progress',
    response: 'CampaignProgressResponse',
  },
  'GET /api/v1/campaign/{campaign_id}/traffic-stats': {
    name: 'get_campaign_traffic_stats',
    response: 'CampaignTrafficStatsResponse',
  },
  'GET /api/v1/campaign/{campaign_id}/source-download-url': {
    name: 'get_campaign_source_download_url',
    response: 'CampaignSourceDownloadResponse',
  },

  'GET /api/v1/tools/': { name: 'list_tools', response: 'ToolResponse' },
  'POST /api/v1/tools/': { name: 'create_tool', request: 'CreateToolRequest', response: 'ToolResponse' },
  'GET /api/v1/tools/{tool_uuid}': { name: 'get_tool', response: 'ToolResponse' },
  'PUT /api/v1/tools/{tool_uuid}': { name: 'update_tool', request: 'UpdateToolRequest', response: 'ToolResponse' },
  'DELETE /api/v1/tools/{tool_uuid}': { name: 'delete_tool', response: 'DeleteToolResponse' },
  'GET /api/v1/organizations/tool-settings': { name: 'get_tool_settings', response: 'ToolSettingsResponse' },
  'PUT /api/v1/organizations/tool-settings': {
    name: 'update_tool_settings',
    request: 'ToolSettingsRequest',
    response: 'ToolSettingsResponse',
  },
}

const TOOL_DEFINITION_NAMES = {
  'definition(http_api)': 'HttpApiToolDefinition',
  'definition(end_call)': 'EndCallToolDefinition',
  'definition(transfer_call)': 'TransferCallToolDefinition',
  'definition(calculator)': 'CalculatorToolDefinition',
}

/**
 * Names of shapes nested in a named schema, as the reference names them. The path walks properties by name; `[]`
 * steps into array items and `(tag)` into the member of a discriminated union whose discriminator is `tag`.
 */
export const NESTED_SCHEMA_NAMES: Record<string, Record<string, string>> = {
  HTTPValidationError: { 'detail[]': 'ValidationError' },
  CampaignResponse: {
    retry_config: 'RetryConfigResponse',
    schedule_config: 'ScheduleConfigResponse',
    circuit_breaker: 'CircuitBreakerConfigResponse',
    'logs[]': 'CampaignLogEntryResponse',
  },
  ScheduleConfigResponse: { 'slots[]': 'TimeSlotResponse' },
  CreateCampaignRequest: {
    retry_config: 'RetryConfigRequest',
    schedule_config: 'ScheduleConfigRequest',
    circuit_breaker: 'CircuitBreakerConfigRequest',
  },
  UpdateCampaignRequest: {
    retry_config: 'RetryConfigRequest',
    schedule_config: 'ScheduleConfigRequest',
    circuit_breaker: 'CircuitBreakerConfigRequest',
  },
  RedialCampaignRequest: { retry_config: 'RetryConfigRequest' },
  ScheduleConfigRequest: { 'slots[]': 'TimeSlotRequest' },
  NodeSpec: {
    category: 'NodeCategory',
    'properties[]': 'PropertySpec',
    'examples[]': 'NodeExample',
    graph_constraints: 'GraphConstraints',
  },
  PropertySpec: {
    type: 'PropertyType',
    display_options: 'DisplayOptions',
    'options[]': 'PropertyOption',
    renderer_options: 'PropertyRendererOptions',
  },
  PropertyRendererOptions: { layout: 'PropertyLayoutOptions', number_input: 'NumberInputOptions' },
  PhoneNumberResponse: { provider_sync: 'ProviderSyncStatus' },
  TelephonyConfigurationDetail: {
    sip_connectivity: 'SIPConnectivityDetails',
    setup_checklist: 'ProviderSetupChecklist',
    'trunks[]': 'TrunkResponse',
  },
  SIPConnectivityDetails: { 'regions[]': 'SIPRegionDetails' },
  SIPRegionDetails: { 'inbound_transports[]': 'SIPTransportDetails' },
  ProviderSetupChecklist: { 'steps[]': 'SetupStep' },
  TelephonyConfigurationListResponse: { 'configurations[]': 'TelephonyConfigurationListItem' },
  TelephonyConfigurationCreateRequest: {
    'config(ari)': 'ARIConfigurationRequest',
    'config(cloudonix)': 'CloudonixConfigurationRequest',
    'config(plivo)': 'PlivoConfigurationRequest',
    'config(telnyx)': 'TelnyxConfigurationRequest',
    'config(twilio)': 'TwilioConfigurationRequest',
    'config(vobiz)': 'VobizConfigurationRequest',
    'config(vonage)': 'VonageConfigurationRequest',
  },
  ARIConfigurationRequest: { external_pbx: 'VicidialExternalPBXConfiguration' },
  VicidialExternalPBXConfiguration: {
    agent_api: 'VicidialAgentAPIConfiguration',
    non_agent_api: 'VicidialNonAgentAPIConfiguration',
  },
  TelephonyProvidersMetadataResponse: { 'providers[]': 'TelephonyProviderMetadata' },
  TelephonyProviderMetadata: { 'fields[]': 'TelephonyProviderUIField' },
  TelephonyProviderUIField: { 'options[]': 'TelephonyProviderUIOption', visible_when: 'TelephonyProviderUICondition' },
  UsageHistoryResponse: { 'runs[]': 'WorkflowRunUsageResponse' },
  WorkflowResponse: { call_disposition_codes: 'CallDispositionCodes' },
  UpdateWorkflowRequest: { workflow_configurations: 'WorkflowConfigurationDefaults' },
  WorkflowConfigurationDefaults: {
    ambient_noise_configuration: 'AmbientNoiseConfigurationDefaults',
    'external_pbx_field_mappings[]': 'ExternalPBXFieldMapping',
  },
  WorkflowRunResponseSchema: { call_type: 'CallType' },
  CampaignDefaultsResponse: {
    default_retry_config: 'RetryConfigResponse',
    last_campaign_settings: 'LastCampaignSettingsResponse',
  },
  CreateToolRequest: TOOL_DEFINITION_NAMES,
  UpdateToolRequest: TOOL_DEFINITION_NAMES,
  HttpApiToolDefinition: { config: 'HttpApiConfig' },
  EndCallToolDefinition: { config: 'EndCallConfig' },
  TransferCallToolDefinition: { config: 'TransferCallConfig' },
  HttpApiConfig: { 'parameters[]': 'ToolParameter', 'preset_parameters[]': 'PresetToolParameter' },
  TransferCallConfig: { 'destinations[]': 'TransferDestination' },
}
