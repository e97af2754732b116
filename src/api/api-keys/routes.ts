import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail, IdParam, SuccessMessage } from '../schemas'
import { ApiKeyView, CreateApiKeyBody, CreatedApiKey, ListApiKeysQuery } from './model'
import { createApiKey } from '../../auth/keys'
import { archiveApiKey, listApiKeys, reactivateApiKey } from '../../auth/api-keys'

const tags = ['API keys']

export const apiKeyRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/user/api-keys' })
    .use(auth(ctx))
    .get('', ({ principal, query }) => listApiKeys(ctx, principal.organizationId, query.include_archived ?? false), {
      query: ListApiKeysQuery,
      response: { 200: t.Array(ApiKeyView), ...authErrors },
      detail: { tags, summary: 'List API keys of the organization' },
    })
    .post('', ({ principal, body }) => createApiKey(ctx, principal.organizationId, body.name, body.scope ?? 'admin'), {
      body: CreateApiKeyBody,
      response: { 200: CreatedApiKey, ...authErrors },
      detail: { tags, summary: 'Create an API key (the full key is returned only here)' },
    })
    .delete(
      '/:api_key_id',
      ({ principal, params }) => {
        archiveApiKey(ctx, principal.organizationId, params.api_key_id)
        return { success: true, message: 'API key archived successfully' }
      },
      {
        params: IdParam('api_key_id'),
        response: { 200: SuccessMessage, 404: ErrorDetail, ...authErrors },
        detail: { tags, summary: 'Archive (revoke) an API key' },
      },
    )
    .put(
      '/:api_key_id/reactivate',
      ({ principal, params }) => {
        reactivateApiKey(ctx, principal.organizationId, params.api_key_id)
        return { success: true, message: 'API key reactivated successfully' }
      },
      {
        params: IdParam('api_key_id'),
        response: { 200: SuccessMessage, 404: ErrorDetail, ...authErrors },
        detail: { tags, summary: 'Reactivate an archived API key' },
      },
    )
