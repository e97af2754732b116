import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import { DownloadQuery, PresignedUploadBody, PresignedUploadResponse, UploadQuery, UploadResponse } from './model'
import { createUploadUrl, CSV_CONTENT_TYPE, receiveUpload, serveDownload } from '../../storage/uploads'

const tags = ['Uploads']

export const uploadRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/s3' })
    // Signed links are their own credential, so these two sit outside the auth plugin.
    .put('/upload', ({ query, request }) => receiveUpload(ctx, query, request), {
      query: UploadQuery,
      parse: 'none',
      response: {
        200: UploadResponse,
        400: ErrorDetail,
        403: ErrorDetail,
        409: ErrorDetail,
        413: ErrorDetail,
        415: ErrorDetail,
      },
      detail: {
        tags,
        summary: 'Upload a file (contacts CSV, knowledge-base document) to a signed URL, once (streamed; no API key)',
        security: [],
      },
    })
    .get('/download', ({ query }) => serveDownload(ctx, query), {
      query: DownloadQuery,
      response: { 200: t.String({ description: 'The file' }), 403: ErrorDetail, 404: ErrorDetail },
      detail: { tags, summary: 'Download a file through a signed link (no API key)', security: [] },
    })
    .use(auth(ctx))
    .post(
      '/presigned-upload-url',
      ({ principal, body }) =>
        createUploadUrl(
          ctx,
          principal.organizationId,
          body.file_name,
          body.file_size,
          body.content_type ?? CSV_CONTENT_TYPE,
        ),
      {
        body: PresignedUploadBody,
        response: { 200: PresignedUploadResponse, ...authErrors },
        detail: { tags, summary: 'Get a signed URL to upload a contacts CSV' },
      },
    )
