-- Organizations and their API keys.
CREATE TABLE organizations (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  concurrent_call_limit INTEGER NOT NULL DEFAULT 10,
  created_at TEXT NOT NULL
);

CREATE TABLE api_keys (
  id INTEGER PRIMARY KEY,
  organization_id INTEGER NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  key_prefix TEXT NOT NULL,
  scope TEXT NOT NULL DEFAULT 'admin' CHECK (scope IN ('admin', 'trigger')),
  is_active INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL,
  last_used_at TEXT,
  archived_at TEXT
);
CREATE INDEX api_keys_org ON api_keys(organization_id, id);
