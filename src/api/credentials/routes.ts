import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import {
  CreateCredentialBody,
  CredentialParams,
  CredentialView,
  DeletedCredential,
  UpdateCredentialBody,
} from './model'
import { checkCredentialBodyShape } from '../../credentials/data'
import { createCredential, getCredential, listCredentials, updateCredential } from '../../credentials/store'
import { deleteUnusedCredential } from '../../tools/credential-users'
import { sentBodyOf } from '../request-body'

const tags = ['Credentials']

export const credentialRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/credentials' })
    .use(auth(ctx))
    .get('', ({ principal }) => listCredentials(ctx, principal.organizationId), {
      response: { 200: t.Array(CredentialView), ...authErrors },
      detail: { tags, summary: 'List the credentials of the organization (never their secrets)' },
    })
    .post('', ({ principal, body }) => createCredential(ctx, principal.organizationId, body), {
      // Before the schema check, which would echo the whole body (secret included) for a missing field.
      transform: ({ request }) => checkCredentialBodyShape(sentBodyOf(request), false),
      body: CreateCredentialBody,
      response: { 200: CredentialView, 409: ErrorDetail, ...authErrors },
      detail: { tags, summary: 'Create a credential (the secret is encrypted at rest and never returned)' },
    })
    .get(
      '/:credential_uuid',
      ({ principal, params }) => getCredential(ctx, principal.organizationId, params.credential_uuid),
      {
        params: CredentialParams,
        response: { 200: CredentialView, 404: ErrorDetail, ...authErrors },
        detail: { tags, summary: 'Get a credential (never its secret)' },
      },
    )
    .put(
      '/:credential_uuid',
      ({ principal, params, body }) => updateCredential(ctx, principal.organizationId, params.credential_uuid, body),
      {
        transform: ({ request }) => checkCredentialBodyShape(sentBodyOf(request), true),
        params: CredentialParams,
        body: UpdateCredentialBody,
        response: { 200: CredentialView, 404: ErrorDetail, 409: ErrorDetail, ...authErrors },
        detail: {
          tags,
          summary: 'Update a credential partially',
          description:
            'Fields left out stay, the stored secret included. credential_data replaces the secret whole; ' +
            'a new credential_type needs its credential_data.',
        },
      },
    )
    .delete(
      '/:credential_uuid',
      ({ principal, params }) => {
        deleteUnusedCredential(ctx, principal.organizationId, params.credential_uuid)
        return { message: 'Credential deleted' }
      },
      {
        params: CredentialParams,
        response: { 200: DeletedCredential, 404: ErrorDetail, 409: ErrorDetail, ...authErrors },
        detail: {
          tags,
          summary: 'Delete a credential (409 while an agent or an active tool names it, naming them)',
        },
      },
    )
