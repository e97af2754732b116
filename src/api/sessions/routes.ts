import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth, SESSION_COOKIE, requireSession } from '../auth'
import { authErrors, ErrorDetail, SuccessMessage, ValidationErrorBody } from '../schemas'
import { createSession, csrfTokenOf, endSession, SESSION_LIFETIME_MS } from '../../auth/sessions'
import { unauthenticated } from '../../lib/errors'
import { closeWebCallsOfSession } from '../../calls/web-call'

const tags = ['Sessions']

const SignInBody = t.Object({
  api_key: t.String({
    minLength: 1,
    maxLength: 256,
    description: 'An API key of the organization (admin or trigger scope)',
  }),
})

const SessionView = t.Object({
  organization_id: t.Integer(),
  api_key_id: t.Integer(),
  scope: t.Union([t.Literal('admin'), t.Literal('trigger')]),
  session: t.Union(
    [
      t.Object({
        expires_at: t.String({ format: 'date-time' }),
        csrf_token: t.String({
          description: 'Send it as X-CSRF-Token with every request of this session that is not a GET',
        }),
      }),
      t.Null(),
    ],
    { description: 'The browser session the request came with; null for a request with X-API-Key' },
  ),
})

/** Secure when the browser reached us over HTTPS (directly, through a proxy that says so, or as the public URL says). */
const isHttps = (ctx: AppContext, request: Request) =>
  request.url.startsWith('https:') ||
  request.headers.get('x-forwarded-proto') === 'https' ||
  ctx.config.publicUrl.startsWith('https:')

const cookie = (ctx: AppContext, request: Request, value: string, maxAgeSeconds: number) =>
  `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${isHttps(ctx, request) ? '; Secure' : ''}`

export const sessionRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/auth/session' })
    .post(
      '',
      ({ body, request, set }) => {
        const session = createSession(ctx, body.api_key)
        if (!session) throw unauthenticated('Invalid or archived API key')
        set.headers['set-cookie'] = cookie(ctx, request, session.token, SESSION_LIFETIME_MS / 1000)
        set.headers['cache-control'] = 'no-store'
        const { organizationId, apiKeyId, scope } = session.principal
        return {
          organization_id: organizationId,
          api_key_id: apiKeyId,
          scope,
          session: { expires_at: session.expiresAt, csrf_token: csrfTokenOf(ctx, session.token) },
        }
      },
      {
        body: SignInBody,
        response: { 200: SessionView, 401: ErrorDetail, 422: ValidationErrorBody },
        detail: {
          tags,
          summary:
            'Sign a browser in with an API key: an HttpOnly session cookie that acts as the key (same scope) for 12 hours',
          security: [],
        },
      },
    )
    .use(auth(ctx, ['admin', 'trigger']))
    .get(
      '',
      ({ principal, request, set }) => {
        set.headers['cache-control'] = 'no-store'
        const session = request.headers.get('x-api-key') ? null : requireSession(ctx, request)
        return {
          organization_id: principal.organizationId,
          api_key_id: principal.apiKeyId,
          scope: principal.scope,
          session: session ? { expires_at: session.expiresAt, csrf_token: csrfTokenOf(ctx, session.token) } : null,
        }
      },
      {
        response: { 200: SessionView, ...authErrors },
        detail: {
          tags,
          summary: 'Who the request is: organization, key, scope, and the browser session with its CSRF token',
        },
      },
    )
    .delete(
      '',
      ({ principal, request, set }) => {
        if (!request.headers.get('x-api-key')) {
          const { id } = requireSession(ctx, request)
          endSession(ctx, principal.organizationId, id)
          closeWebCallsOfSession(ctx, principal.organizationId, id)
          set.headers['set-cookie'] = cookie(ctx, request, '', 0)
        }
        return { success: true, message: 'Signed out' }
      },
      {
        response: { 200: SuccessMessage, ...authErrors },
        detail: {
          tags,
          summary: 'Sign the browser out: its session ends at once (a request with X-API-Key has none to end)',
        },
      },
    )
