-- Model servers an organization reaches (provider connections), the model configurations built on them, which
-- connections each configuration uses, and the organization's price card.

CREATE TABLE provider_connections (
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL,
  provider TEXT NOT NULL CHECK (provider IN ('openai', 'speaches', 'groq', 'openrouter')),
  base_url TEXT NOT NULL,
  -- Sealed with the master key (AES-256-GCM, 'v1:...'); null when the server takes no key.
  api_key TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (organization_id, name)
);

CREATE TABLE model_configurations (
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL,
  is_default INTEGER NOT NULL DEFAULT 0,
  -- JSON sections {provider_connection_uuid, settings}; tts may be {builtin: true, settings}; stt and tts may be null.
  llm TEXT NOT NULL,
  stt TEXT,
  tts TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (organization_id, name)
);
-- At most one default configuration per organization, whatever the code does.
CREATE UNIQUE INDEX model_configurations_one_default ON model_configurations(organization_id) WHERE is_default = 1;

-- The connections a configuration's sections use: a connection in use cannot be deleted (no cascade).
CREATE TABLE model_configuration_connections (
  configuration_id INTEGER NOT NULL REFERENCES model_configurations(id) ON DELETE CASCADE,
  connection_id INTEGER NOT NULL REFERENCES provider_connections(id),
  PRIMARY KEY (configuration_id, connection_id)
) WITHOUT ROWID;
CREATE INDEX model_configuration_connections_connection ON model_configuration_connections(connection_id);

-- Prices for cost_info (per 1k LLM tokens, per STT minute, per 1k TTS characters, per telephony minute).
CREATE TABLE organization_price_cards (
  organization_id INTEGER PRIMARY KEY REFERENCES organizations(id),
  card TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- The run's model_overrides as its start request sent them (resolved when the conversation starts).
ALTER TABLE workflow_runs ADD COLUMN model_overrides TEXT;

-- Per-run model choices of a campaign's calls (the spec's model_overrides), applied to every call it places.
ALTER TABLE campaigns ADD COLUMN model_overrides TEXT;
