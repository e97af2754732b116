import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { auth } from '../auth'
import { authErrors, ErrorDetail } from '../schemas'
import {
  createDocumentUpload,
  deleteDocument,
  getDocument,
  listDocuments,
  reprocessDocument,
  submitDocument,
} from '../../knowledge/documents'
import { organizationEmbedder } from '../../knowledge/embedder'
import { searchKnowledgeBase } from '../../knowledge/search'
import {
  DocumentDeleted,
  DocumentList,
  DocumentListQuery,
  DocumentUuidParam,
  DocumentView,
  ProcessDocumentBody,
  ReprocessBody,
  SearchBody,
  SearchResponse,
  UploadUrlBody,
  UploadUrlResponse,
} from './model'

const tags = ['Knowledge base']
const documentErrors = { 404: ErrorDetail, ...authErrors }

export const knowledgeBaseRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/knowledge-base' })
    .use(auth(ctx))
    .post('/upload-url', ({ principal, body }) => createDocumentUpload(ctx, principal.organizationId, body), {
      body: UploadUrlBody,
      response: { 200: UploadUrlResponse, ...authErrors },
      detail: {
        tags,
        summary: 'Start a document: a signed URL to PUT the file to (PDF, DOCX, text, Markdown, CSV, JSON)',
      },
    })
    .post('/process-document', ({ principal, body }) => submitDocument(ctx, principal.organizationId, body), {
      body: ProcessDocumentBody,
      response: { 200: DocumentView, 409: ErrorDetail, ...documentErrors },
      detail: {
        tags,
        summary: 'Queue an uploaded document for processing (text extraction, chunking, embeddings) in the background',
      },
    })
    .get('/documents', ({ principal, query }) => listDocuments(ctx, principal.organizationId, query), {
      query: DocumentListQuery,
      response: { 200: DocumentList, ...authErrors },
      detail: { tags, summary: "List the organization's documents, newest first" },
    })
    .get(
      '/documents/:document_uuid',
      ({ principal, params }) => getDocument(ctx, principal.organizationId, params.document_uuid),
      {
        params: DocumentUuidParam,
        response: { 200: DocumentView, ...documentErrors },
        detail: { tags, summary: 'Get a document and its processing status' },
      },
    )
    .post(
      '/documents/:document_uuid/reprocess',
      ({ principal, params, body }) =>
        reprocessDocument(ctx, principal.organizationId, params.document_uuid, body ?? {}),
      {
        params: DocumentUuidParam,
        body: t.Optional(ReprocessBody),
        response: { 200: DocumentView, 409: ErrorDetail, ...documentErrors },
        detail: {
          tags,
          summary: 'Process a completed or failed document again (new embeddings model, or after a failure)',
        },
      },
    )
    .delete(
      '/documents/:document_uuid',
      ({ principal, params }) => deleteDocument(ctx, principal.organizationId, params.document_uuid),
      {
        params: DocumentUuidParam,
        response: { 200: DocumentDeleted, ...documentErrors },
        detail: { tags, summary: 'Delete a document with its chunks and file' },
      },
    )
    .post(
      '/search',
      ({ principal, body }) =>
        searchKnowledgeBase(ctx, principal.organizationId, organizationEmbedder(ctx, principal.organizationId), body),
      {
        body: SearchBody,
        response: { 200: SearchResponse, 502: ErrorDetail, ...authErrors },
        detail: { tags, summary: 'Search the documents by meaning, as an agent would (for testing)' },
      },
    )
