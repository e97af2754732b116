-- Credentials of an organization: the secret that HTTP tools, webhook nodes and pre-call fetch send as a header.

CREATE TABLE credentials (
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL,
  description TEXT,
  credential_type TEXT NOT NULL
    CHECK (credential_type IN ('bearer_token', 'api_key', 'basic_auth', 'custom_header')),
  -- The JSON of credential_data, sealed whole with the master key (AES-256-GCM, 'v1:...'): header names included.
  sealed_data TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (organization_id, name)
);
