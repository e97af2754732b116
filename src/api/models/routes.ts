import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import {
  checkConnection,
  createConnection,
  deleteConnection,
  getConnection,
  listConnections,
  updateConnection,
} from '../../models/connections'
import {
  createConfiguration,
  deleteConfiguration,
  getConfiguration,
  listConfigurations,
  updateConfiguration,
} from '../../models/configurations'
import { deletePriceCard, getPriceCard, setPriceCard } from '../../models/price-card'
import { providersMetadata } from '../../models/providers'
import {
  CreateModelConfigurationBody,
  CreateProviderConnectionBody,
  DeletedConfiguration,
  DeletedConnection,
  ModelConfigurationList,
  ModelConfigurationView,
  ModelProvidersMetadata,
  PriceCardSchema,
  PriceCardView,
  ProviderConnectionCheck,
  ProviderConnectionList,
  ProviderConnectionView,
  UpdateModelConfigurationBody,
  UpdateProviderConnectionBody,
  UuidParams,
} from './model'

const tags = ['Models']
const itemErrors = { 404: ErrorDetail, ...authErrors }
const saveErrors = { 400: ErrorDetail, 409: ErrorDetail, ...itemErrors }

export const modelRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/organizations' })
    .use(auth(ctx))
    .get('/model-providers/metadata', () => providersMetadata(), {
      response: { 200: ModelProvidersMetadata, ...authErrors },
      detail: { tags, summary: 'List the kinds of model server, the services each offers and their defaults' },
    })
    .get('/provider-connections', ({ principal }) => listConnections(ctx, principal.organizationId), {
      response: { 200: ProviderConnectionList, ...authErrors },
      detail: { tags, summary: 'List model server connections (keys masked)' },
    })
    .post('/provider-connections', ({ principal, body }) => createConnection(ctx, principal.organizationId, body), {
      body: CreateProviderConnectionBody,
      response: { 200: ProviderConnectionView, 409: ErrorDetail, ...authErrors },
      detail: {
        tags,
        summary: 'Create a connection to an OpenAI-compatible model server (the key is encrypted at rest)',
      },
    })
    .get(
      '/provider-connections/:uuid',
      ({ principal, params }) => getConnection(ctx, principal.organizationId, params.uuid),
      {
        params: UuidParams,
        response: { 200: ProviderConnectionView, ...itemErrors },
        detail: { tags, summary: 'Get a model server connection (key masked)' },
      },
    )
    .put(
      '/provider-connections/:uuid',
      ({ principal, params, body }) => updateConnection(ctx, principal.organizationId, params.uuid, body),
      {
        params: UuidParams,
        body: UpdateProviderConnectionBody,
        response: { 200: ProviderConnectionView, ...saveErrors },
        detail: { tags, summary: 'Update a connection partially (a masked key sent back keeps the stored one)' },
      },
    )
    .delete(
      '/provider-connections/:uuid',
      ({ principal, params }) => {
        deleteConnection(ctx, principal.organizationId, params.uuid)
        return { message: 'Provider connection deleted' }
      },
      {
        params: UuidParams,
        response: { 200: DeletedConnection, 409: ErrorDetail, ...itemErrors },
        detail: { tags, summary: 'Delete a connection no model configuration uses' },
      },
    )
    .post(
      '/provider-connections/:uuid/check',
      ({ principal, params }) => checkConnection(ctx, principal.organizationId, params.uuid),
      {
        params: UuidParams,
        response: { 200: ProviderConnectionCheck, ...itemErrors },
        detail: { tags, summary: 'Ask the server for its models (GET {base_url}/models): what it lists, or the error' },
      },
    )
    .get('/model-configurations', ({ principal }) => listConfigurations(ctx, principal.organizationId), {
      response: { 200: ModelConfigurationList, ...authErrors },
      detail: { tags, summary: 'List model configurations' },
    })
    .post('/model-configurations', ({ principal, body }) => createConfiguration(ctx, principal.organizationId, body), {
      body: CreateModelConfigurationBody,
      response: { 200: ModelConfigurationView, 409: ErrorDetail, ...authErrors },
      detail: { tags, summary: 'Create a model configuration (LLM, speech to text, text to speech)' },
    })
    .get(
      '/model-configurations/:uuid',
      ({ principal, params }) => getConfiguration(ctx, principal.organizationId, params.uuid),
      {
        params: UuidParams,
        response: { 200: ModelConfigurationView, ...itemErrors },
        detail: { tags, summary: 'Get a model configuration' },
      },
    )
    .put(
      '/model-configurations/:uuid',
      ({ principal, params, body }) => updateConfiguration(ctx, principal.organizationId, params.uuid, body),
      {
        params: UuidParams,
        body: UpdateModelConfigurationBody,
        response: { 200: ModelConfigurationView, ...saveErrors },
        detail: { tags, summary: 'Update a model configuration partially (a sent section replaces the stored one)' },
      },
    )
    .delete(
      '/model-configurations/:uuid',
      ({ principal, params }) => {
        deleteConfiguration(ctx, principal.organizationId, params.uuid)
        return { message: 'Model configuration deleted', uuid: params.uuid }
      },
      {
        params: UuidParams,
        response: { 200: DeletedConfiguration, 409: ErrorDetail, ...itemErrors },
        detail: { tags, summary: 'Delete a model configuration no agent pins' },
      },
    )
    .get('/price-card', ({ principal }) => getPriceCard(ctx, principal.organizationId), {
      response: { 200: PriceCardView, ...authErrors },
      detail: { tags, summary: 'Get the price card runs are costed with (cost_info)' },
    })
    .put('/price-card', ({ principal, body }) => setPriceCard(ctx, principal.organizationId, body), {
      body: PriceCardSchema,
      response: { 200: PriceCardView, ...authErrors },
      detail: {
        tags,
        summary: 'Set the price card: per 1k LLM tokens, per STT minute, per 1k TTS characters, per telephony minute',
      },
    })
    .delete('/price-card', ({ principal }) => deletePriceCard(ctx, principal.organizationId), {
      response: { 200: PriceCardView, ...authErrors },
      detail: { tags, summary: 'Remove the price card (runs then finish with an empty cost_info)' },
    })
