-- The knowledge base: documents an organization uploads (PDF, DOCX, text, Markdown, CSV, JSON), processed in the
-- background into text chunks with embedding vectors, which agents' nodes search during a conversation.

-- Which embeddings model a configuration uses (JSON section like llm/stt/tts); NULL: none.
ALTER TABLE model_configurations ADD COLUMN embeddings TEXT;

CREATE TABLE knowledge_base_documents (
  id INTEGER PRIMARY KEY,
  document_uuid TEXT NOT NULL UNIQUE,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  filename TEXT NOT NULL,
  -- The object the signed upload wrote: knowledge_base/<org>/<document_uuid>/<file name>.
  file_key TEXT NOT NULL UNIQUE,
  mime_type TEXT NOT NULL,
  file_size_bytes INTEGER NOT NULL DEFAULT 0,
  file_hash TEXT,
  retrieval_mode TEXT NOT NULL CHECK (retrieval_mode IN ('chunked', 'full_document')),
  -- uploading (URL issued) -> pending (queued) -> processing -> completed | failed.
  processing_status TEXT NOT NULL CHECK (processing_status IN ('uploading', 'pending', 'processing', 'completed', 'failed')),
  processing_error TEXT,
  processing_attempts INTEGER NOT NULL DEFAULT 0,
  -- The claim's lease: renewed while a process works on it; an expired one is taken over (a crash or restart).
  processing_since TEXT,
  full_text TEXT,
  total_chunks INTEGER NOT NULL DEFAULT 0,
  -- The connection and model that embedded the chunks, and the tokens it counted.
  embedding_connection_uuid TEXT,
  embedding_model TEXT,
  embedding_dimension INTEGER,
  embedding_tokens INTEGER NOT NULL DEFAULT 0,
  -- JSON: {num_pages, document_type, characters}.
  docling_metadata TEXT NOT NULL DEFAULT '{}',
  custom_metadata TEXT NOT NULL DEFAULT '{}',
  is_active INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  completed_at TEXT
);
CREATE INDEX knowledge_base_documents_org ON knowledge_base_documents(organization_id, is_active, id);
CREATE INDEX knowledge_base_documents_status ON knowledge_base_documents(processing_status, id);

CREATE TABLE knowledge_base_chunks (
  id INTEGER PRIMARY KEY,
  document_id INTEGER NOT NULL REFERENCES knowledge_base_documents(id) ON DELETE CASCADE,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  chunk_index INTEGER NOT NULL,
  chunk_text TEXT NOT NULL,
  contextualized_text TEXT NOT NULL,
  -- JSON: {page?, headings?}.
  chunk_metadata TEXT NOT NULL DEFAULT '{}',
  token_count INTEGER NOT NULL,
  -- Little-endian float32, normalised to length 1 (a dot product is the cosine similarity).
  embedding BLOB NOT NULL
);
CREATE UNIQUE INDEX knowledge_base_chunks_document ON knowledge_base_chunks(document_id, chunk_index);
