import { blob, index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export type DocumentStatus = 'uploading' | 'pending' | 'processing' | 'completed' | 'failed'
export type RetrievalMode = 'chunked' | 'full_document'

export const knowledgeBaseDocuments = sqliteTable(
  'knowledge_base_documents',
  {
    id: integer('id').primaryKey(),
    documentUuid: text('document_uuid').notNull().unique(),
    organizationId: integer('organization_id').notNull(),
    filename: text('filename').notNull(),
    fileKey: text('file_key').notNull().unique(),
    mimeType: text('mime_type').notNull(),
    fileSizeBytes: integer('file_size_bytes').notNull().default(0),
    fileHash: text('file_hash'),
    retrievalMode: text('retrieval_mode').$type<RetrievalMode>().notNull(),
    processingStatus: text('processing_status').$type<DocumentStatus>().notNull(),
    processingError: text('processing_error'),
    processingAttempts: integer('processing_attempts').notNull().default(0),
    processingSince: text('processing_since'),
    fullText: text('full_text'),
    totalChunks: integer('total_chunks').notNull().default(0),
    embeddingConnectionUuid: text('embedding_connection_uuid'),
    embeddingModel: text('embedding_model'),
    embeddingDimension: integer('embedding_dimension'),
    embeddingTokens: integer('embedding_tokens').notNull().default(0),
    doclingMetadata: text('docling_metadata', { mode: 'json' }).$type<Record<string, unknown>>().notNull().default({}),
    customMetadata: text('custom_metadata', { mode: 'json' }).$type<Record<string, unknown>>().notNull().default({}),
    isActive: integer('is_active', { mode: 'boolean' }).notNull().default(true),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    completedAt: text('completed_at'),
  },
  (table) => [
    index('knowledge_base_documents_org').on(table.organizationId, table.isActive, table.id),
    index('knowledge_base_documents_status').on(table.processingStatus, table.id),
  ],
)

export const knowledgeBaseChunks = sqliteTable(
  'knowledge_base_chunks',
  {
    id: integer('id').primaryKey(),
    documentId: integer('document_id').notNull(),
    organizationId: integer('organization_id').notNull(),
    chunkIndex: integer('chunk_index').notNull(),
    chunkText: text('chunk_text').notNull(),
    contextualizedText: text('contextualized_text').notNull(),
    chunkMetadata: text('chunk_metadata', { mode: 'json' }).$type<Record<string, unknown>>().notNull().default({}),
    tokenCount: integer('token_count').notNull(),
    embedding: blob('embedding', { mode: 'buffer' }).notNull(),
  },
  (table) => [uniqueIndex('knowledge_base_chunks_document').on(table.documentId, table.chunkIndex)],
)

export type KnowledgeDocumentRow = typeof knowledgeBaseDocuments.$inferSelect
