import { Elysia } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import { UsageQuery, UsageResponse, UsageSummaryQuery, UsageSummaryResponse } from './model'
import { usageReportJson, usageSummary } from '../../runs/usage'

const JSON_CONTENT = { 'content-type': 'application/json' }

export const usageRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/organizations/usage' })
    .use(auth(ctx))
    // The body is written by SQLite (see usageReportJson); the usage tests check it against UsageResponse.
    .get(
      '/runs',
      ({ principal, query }) =>
        new Response(usageReportJson(ctx, principal.organizationId, query), { headers: JSON_CONTENT }),
      {
        query: UsageQuery,
        response: { 200: UsageResponse, 400: ErrorDetail, ...authErrors },
        detail: {
          tags: ['Usage'],
          summary: 'List the finished runs of the organization with duration and cost, filtered and paged',
        },
      },
    )
    .get('/summary', ({ principal, query }) => usageSummary(ctx, principal.organizationId, query), {
      query: UsageSummaryQuery,
      response: { 200: UsageSummaryResponse, ...authErrors },
      detail: {
        tags: ['Usage'],
        summary: 'Finished runs counted, with duration, tokens and cost, by outcome, agent or day, within dates',
      },
    })
