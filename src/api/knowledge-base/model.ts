import { t } from 'elysia'
import { MAX_NAME_LENGTH, MAX_TEXT_LENGTH } from '../../lib/limits'
import { DOCUMENT_LIMITS, EXTENSIONS } from '../../knowledge/formats'
import { Uuid } from '../../models/schemas'

const RetrievalMode = t.Union([t.Literal('chunked'), t.Literal('full_document')], {
  description:
    'chunked: searched by meaning (needs an embeddings model); full_document: the whole text given to the model (at most 60,000 characters)',
})
const Status = t.Union([t.Literal('pending'), t.Literal('processing'), t.Literal('completed'), t.Literal('failed')])
const Metadata = t.Record(t.String(), t.Unknown())

export const UploadUrlBody = t.Object({
  filename: t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: `One of ${EXTENSIONS.join(', ')}` }),
  mime_type: t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: 'The Content-Type the PUT will send' }),
  file_size: t.Optional(
    t.Integer({
      exclusiveMinimum: 0,
      description: `Bytes; the upload may not exceed it (default and maximum ${DOCUMENT_LIMITS.maxBytes})`,
    }),
  ),
  custom_metadata: t.Optional(Metadata),
})

export const UploadUrlResponse = t.Object({
  upload_url: t.String({ description: 'PUT the file here with Content-Type = mime_type; no API key needed' }),
  document_uuid: Uuid,
  s3_key: t.String({ description: 'Send back to process-document' }),
  expires_in: t.Integer({ description: 'Seconds the upload URL stays valid' }),
})

export const ProcessDocumentBody = t.Object({
  document_uuid: Uuid,
  s3_key: t.String({ minLength: 1, maxLength: 1024 }),
  retrieval_mode: t.Optional(RetrievalMode),
})

export const ReprocessBody = t.Object({ retrieval_mode: t.Optional(RetrievalMode) })

export const DocumentView = t.Object({
  id: t.Integer(),
  document_uuid: Uuid,
  filename: t.String(),
  file_size_bytes: t.Integer(),
  file_hash: t.Union([t.String(), t.Null()]),
  mime_type: t.String(),
  retrieval_mode: RetrievalMode,
  source_url: t.Null(),
  total_chunks: t.Integer(),
  processing_status: Status,
  processing_error: t.Union([t.String(), t.Null()], { description: 'Why processing failed' }),
  processing_attempts: t.Integer(),
  embedding_model: t.Union([t.String(), t.Null()]),
  embedding_dimension: t.Union([t.Integer(), t.Null()]),
  embedding_tokens: t.Integer({ description: 'Tokens the embeddings server counted for the chunks' }),
  docling_metadata: Metadata,
  custom_metadata: Metadata,
  is_active: t.Boolean(),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

export const DocumentListQuery = t.Object({
  status: t.Optional(Status),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 100 })),
  offset: t.Optional(t.Integer({ minimum: 0, default: 0 })),
})

export const DocumentList = t.Object({
  documents: t.Array(DocumentView),
  total: t.Integer(),
  limit: t.Integer(),
  offset: t.Integer(),
})

export const DocumentUuidParam = t.Object({ document_uuid: t.String({ maxLength: 64 }) })

export const DocumentDeleted = t.Object({ message: t.String() })

export const SearchBody = t.Object({
  query: t.String({ minLength: 1, maxLength: MAX_TEXT_LENGTH }),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 50, default: 5 })),
  document_uuids: t.Optional(t.Array(Uuid, { maxItems: 100 })),
  min_similarity: t.Optional(t.Number({ minimum: 0, maximum: 1 })),
})

export const SearchResponse = t.Object({
  chunks: t.Array(
    t.Object({
      id: t.Integer(),
      document_id: t.Integer(),
      document_uuid: Uuid,
      filename: t.String(),
      chunk_index: t.Integer(),
      chunk_text: t.String(),
      contextualized_text: t.String(),
      chunk_metadata: Metadata,
      similarity: t.Number(),
    }),
  ),
  query: t.String(),
  total_results: t.Integer(),
  unavailable_documents: t.Array(t.Object({ document_uuid: t.String(), reason: t.String() }), {
    description:
      'Named documents that were not searched (not ready, failed, unknown, embedded by another model), with the reason',
  }),
})
