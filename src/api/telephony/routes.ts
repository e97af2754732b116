import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import { syncAriConnections } from '../../telephony/ari/manager'
import { providerMetadata } from '../../telephony/config/providers'
import {
  ConfigIdParams,
  ConfigurationDetail,
  ConfigurationList,
  CreateConfigurationBody,
  CreatePhoneNumberBody,
  CreateTrunkBody,
  DeletedConfiguration,
  DeletedPhoneNumber,
  PhoneNumberList,
  PhoneNumberParams,
  PhoneNumberView,
  ProvidersMetadata,
  TrunkDeleted,
  TrunkList,
  TrunkParams,
  TrunkView,
  UpdateConfigurationBody,
  UpdatePhoneNumberBody,
  UpdateTrunkBody,
} from './model'
import {
  createPhoneNumber,
  deletePhoneNumber,
  getPhoneNumber,
  listPhoneNumbers,
  setDefaultCaller,
  updatePhoneNumber,
} from '../../telephony/config/phone-numbers'
import {
  createConfiguration,
  deleteConfiguration,
  getConfiguration,
  listConfigurations,
  reactivateConfiguration,
  setDefaultOutbound,
  updateConfiguration,
  type CreateConfigurationInput,
} from '../../telephony/config/configuration-service'
import { createTrunk, deleteTrunk, listTrunks, updateTrunk } from '../../telephony/config/trunks'

const tags = ['Telephony']
const configErrors = { 404: ErrorDetail, ...authErrors }
/** Saving can call the provider: it may refuse (400) or be unreachable (502). */
const saveErrors = { 400: ErrorDetail, 409: ErrorDetail, 502: ErrorDetail, ...configErrors }

/** What every route of this file is behind: the key (admin scope), and the ARI connections synced after a change. */
const telephonyPlugin = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/organizations' })
    .use(auth(ctx))
    // Creating, editing, reactivating or deleting a configuration may start, restart or stop an ARI connection.
    .onAfterResponse(({ request }) => {
      if (request.method !== 'GET') void syncAriConnections(ctx)
    })

/** The providers' metadata and the configurations. */
const configurationRoutes = (ctx: AppContext) =>
  telephonyPlugin(ctx)
    .get('/telephony-providers/metadata', () => providerMetadata(), {
      response: { 200: ProvidersMetadata, ...authErrors },
      detail: { tags, summary: 'List supported providers and the form fields of each' },
    })
    .get('/telephony-configs', ({ principal }) => listConfigurations(ctx, principal.organizationId), {
      response: { 200: ConfigurationList, ...authErrors },
      detail: { tags, summary: 'List telephony configurations with their outbound readiness' },
    })
    .post(
      '/telephony-configs',
      ({ principal, body }) => createConfiguration(ctx, principal.organizationId, body as CreateConfigurationInput),
      {
        body: CreateConfigurationBody,
        response: { 200: ConfigurationDetail, ...saveErrors },
        detail: {
          tags,
          summary: 'Create a telephony configuration (secrets are encrypted at rest and masked in responses)',
        },
      },
    )
    .get(
      '/telephony-configs/:config_id',
      ({ principal, params }) => getConfiguration(ctx, principal.organizationId, params.config_id),
      {
        params: ConfigIdParams,
        response: { 200: ConfigurationDetail, ...configErrors },
        detail: { tags, summary: 'Get a telephony configuration (credentials masked)' },
      },
    )
    .put(
      '/telephony-configs/:config_id',
      ({ principal, params, body }) => updateConfiguration(ctx, principal.organizationId, params.config_id, body),
      {
        params: ConfigIdParams,
        body: UpdateConfigurationBody,
        response: { 200: ConfigurationDetail, ...saveErrors },
        detail: { tags, summary: 'Update a telephony configuration partially (the provider cannot change)' },
      },
    )
    .delete(
      '/telephony-configs/:config_id',
      ({ principal, params }) => {
        deleteConfiguration(ctx, principal.organizationId, params.config_id)
        return { message: 'Telephony configuration deleted' }
      },
      {
        params: ConfigIdParams,
        response: { 200: DeletedConfiguration, 409: ErrorDetail, ...configErrors },
        detail: { tags, summary: 'Delete a telephony configuration with its phone numbers and trunks' },
      },
    )
    .post(
      '/telephony-configs/:config_id/set-default-outbound',
      ({ principal, params }) => setDefaultOutbound(ctx, principal.organizationId, params.config_id),
      {
        params: ConfigIdParams,
        response: { 200: ConfigurationDetail, ...configErrors },
        detail: { tags, summary: 'Make a configuration the organization default for outbound calls' },
      },
    )
    .post(
      '/telephony-configs/:config_id/reactivate',
      ({ principal, params }) => reactivateConfiguration(ctx, principal.organizationId, params.config_id),
      {
        params: ConfigIdParams,
        response: { 200: ConfigurationDetail, ...configErrors },
        detail: { tags, summary: 'Reactivate a configuration that was taken out of service' },
      },
    )

/** The trunks of a configuration. */
const trunkRoutes = (ctx: AppContext) =>
  telephonyPlugin(ctx)
    .get(
      '/telephony-configs/:config_id/trunks',
      ({ principal, params }) => listTrunks(ctx, principal.organizationId, params.config_id),
      {
        params: ConfigIdParams,
        response: { 200: TrunkList, 400: ErrorDetail, ...configErrors },
        detail: { tags, summary: 'List the trunks of a configuration' },
      },
    )
    .post(
      '/telephony-configs/:config_id/trunks',
      ({ principal, params, body }) => createTrunk(ctx, principal.organizationId, params.config_id, body),
      {
        params: ConfigIdParams,
        body: CreateTrunkBody,
        response: { 200: TrunkView, 400: ErrorDetail, 409: ErrorDetail, ...configErrors },
        detail: { tags, summary: 'Add a trunk to a configuration whose provider has trunks' },
      },
    )
    .put(
      '/telephony-configs/:config_id/trunks/:trunk_id',
      ({ principal, params, body }) =>
        updateTrunk(ctx, principal.organizationId, params.config_id, params.trunk_id, body),
      {
        params: TrunkParams,
        body: UpdateTrunkBody,
        response: { 200: TrunkView, 400: ErrorDetail, 409: ErrorDetail, ...configErrors },
        detail: { tags, summary: 'Update a trunk partially' },
      },
    )
    .delete(
      '/telephony-configs/:config_id/trunks/:trunk_id',
      ({ principal, params }) => {
        deleteTrunk(ctx, principal.organizationId, params.config_id, params.trunk_id)
        return { success: true }
      },
      {
        params: TrunkParams,
        response: { 200: TrunkDeleted, 400: ErrorDetail, 409: ErrorDetail, ...configErrors },
        detail: { tags, summary: 'Delete a trunk no phone number dials out over' },
      },
    )

/** The phone numbers of a configuration. */
const phoneNumberRoutes = (ctx: AppContext) =>
  telephonyPlugin(ctx)
    .get(
      '/telephony-configs/:config_id/phone-numbers',
      ({ principal, params }) => listPhoneNumbers(ctx, principal.organizationId, params.config_id),
      {
        params: ConfigIdParams,
        response: { 200: PhoneNumberList, ...configErrors },
        detail: { tags, summary: 'List the phone numbers of a configuration' },
      },
    )
    .post(
      '/telephony-configs/:config_id/phone-numbers',
      ({ principal, params, body }) => createPhoneNumber(ctx, principal.organizationId, params.config_id, body),
      {
        params: ConfigIdParams,
        body: CreatePhoneNumberBody,
        response: { 200: PhoneNumberView, 400: ErrorDetail, 409: ErrorDetail, ...configErrors },
        detail: { tags, summary: 'Add a phone number (E.164, national with country_code, SIP URI or extension)' },
      },
    )
    .get(
      '/telephony-configs/:config_id/phone-numbers/:phone_number_id',
      ({ principal, params }) =>
        getPhoneNumber(ctx, principal.organizationId, params.config_id, params.phone_number_id),
      {
        params: PhoneNumberParams,
        response: { 200: PhoneNumberView, ...configErrors },
        detail: { tags, summary: 'Get a phone number' },
      },
    )
    .put(
      '/telephony-configs/:config_id/phone-numbers/:phone_number_id',
      ({ principal, params, body }) =>
        updatePhoneNumber(ctx, principal.organizationId, params.config_id, params.phone_number_id, body),
      {
        params: PhoneNumberParams,
        body: UpdatePhoneNumberBody,
        response: { 200: PhoneNumberView, 400: ErrorDetail, 409: ErrorDetail, ...configErrors },
        detail: { tags, summary: 'Update a phone number partially (the address cannot change)' },
      },
    )
    .delete(
      '/telephony-configs/:config_id/phone-numbers/:phone_number_id',
      ({ principal, params }) => {
        deletePhoneNumber(ctx, principal.organizationId, params.config_id, params.phone_number_id)
        return { message: 'Phone number deleted', provider_sync: null }
      },
      {
        params: PhoneNumberParams,
        response: { 200: DeletedPhoneNumber, ...configErrors },
        detail: { tags, summary: 'Delete a phone number' },
      },
    )
    .post(
      '/telephony-configs/:config_id/phone-numbers/:phone_number_id/set-default-caller',
      ({ principal, params }) =>
        setDefaultCaller(ctx, principal.organizationId, params.config_id, params.phone_number_id),
      {
        params: PhoneNumberParams,
        response: { 200: PhoneNumberView, ...configErrors },
        detail: { tags, summary: 'Make a phone number the default caller id of its configuration' },
      },
    )

export const telephonyRoutes = (ctx: AppContext) =>
  new Elysia().use(configurationRoutes(ctx)).use(trunkRoutes(ctx)).use(phoneNumberRoutes(ctx))
