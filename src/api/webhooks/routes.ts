import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors } from '../schemas'
import { createSigningSecret, signingSecretStatus } from '../../runs/signing-secret'
import { CreatedSigningSecret, SigningSecretStatus } from './model'

const tags = ['Webhooks']

export const webhookRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/organizations/webhook-signing-secret' })
    .use(auth(ctx))
    .get('', ({ principal }) => signingSecretStatus(ctx, principal.organizationId), {
      response: { 200: SigningSecretStatus, ...authErrors },
      detail: { tags, summary: 'Whether webhook deliveries are signed, and the last 4 characters of the secret' },
    })
    .post('', ({ principal }) => createSigningSecret(ctx, principal.organizationId), {
      response: { 200: CreatedSigningSecret, ...authErrors },
      detail: { tags, summary: 'Create or rotate the webhook signing secret; the answer is the only time it is shown' },
    })
